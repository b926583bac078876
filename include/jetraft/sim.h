/*
 * jetraft/sim.h — the deterministic cluster fixture (placeholder; see lib/sim/).
 */
#ifndef JETRAFT_SIM_H
#define JETRAFT_SIM_H
#include "jetraft.h"
#endif
