/*
 * monitor.h — monitoring over HTTP (libmicrohttpd): /healthz, /jsz and /metrics.
 *
 * libmicrohttpd answers on its own thread; it never touches the node. The loop thread publishes
 * a snapshot of the counters once a second (and after each change of role it sees), and the
 * handlers render that snapshot under a mutex.
 */
#ifndef SRV_MONITOR_H
#define SRV_MONITOR_H

#include "server.h"

int monitor_start(server *s);
void monitor_stop(server *s);

#endif
