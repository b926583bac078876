/*
 * natsclient.c — the server tests' libnats connection (see natsclient.h).
 */
#include "natsclient.h"

#include <stdio.h>

#include "procs.h"

natsConnection *connect_cluster(const int *client_port, int n, int retry_first, natsOptions **opts)
{
    char urls[16][64];
    const char *url_ptrs[16];
    if (n > 16) die("connect_cluster: %d servers, at most 16", n);
    for (int i = 0; i < n; i++) {
        snprintf(urls[i], sizeof urls[i], "nats://127.0.0.1:%d", client_port[i]);
        url_ptrs[i] = urls[i];
    }
    natsConnection *nc = NULL;
    *opts = NULL;
    natsOptions_Create(opts);
    natsOptions_SetServers(*opts, url_ptrs, n);
    natsOptions_SetMaxReconnect(*opts, -1);
    natsOptions_SetReconnectWait(*opts, 100);
    if (retry_first) natsOptions_SetRetryOnFailedConnect(*opts, true, NULL, NULL);
    natsOptions_SetTimeout(*opts, 2000);
    natsOptions_SetNoRandomize(*opts, true);
    if (natsConnection_Connect(&nc, *opts) != NATS_OK) die("cannot connect");
    return nc;
}
