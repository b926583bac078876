/* the seam header pulls in the core's structures */
#include "node/node.h"
