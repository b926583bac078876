/*
 * jetraft.h — the public C ABI of libjetraft.
 *
 * libjetraft is an embeddable replicated-log library: durable streams and raw Raft groups, each
 * replicated by its own Raft group, many groups per node, all driven from the host's own event
 * loop. The host owns every thread, socket and timer; the library never creates a thread, never
 * opens a socket, never sleeps, and keeps no global mutable state.
 *
 * ABI conventions
 *  - Every public symbol starts with `jr_`; every macro with `JR_`.
 *  - Handles are opaque. Config structs start with a `size` field that the caller sets to
 *    sizeof(struct) (the *_init() functions do it): fields are only ever appended, so an older
 *    caller keeps working against a newer library.
 *  - Plug-in tables (jr_host, jr_vfs, jr_allocator) carry a `version` field; fields are only ever
 *    appended, and the library reads only those that the version declares.
 *  - Functions return 0 or a negative JR_E* code (see jr_strerror(), jr_err_name()); a node keeps a
 *    human-readable message for its last error (jr_node_errmsg()).
 *  - Asynchronous results arrive through callbacks that run inside jr_node_recv() or
 *    jr_node_tick() on the node's thread, never synchronously inside the call that started them.
 *    Pointers passed to a callback are borrowed for the duration of the callback.
 *  - A node is driven by one thread at a time; distinct nodes are independent.
 */
#ifndef JETRAFT_H
#define JETRAFT_H

#include "jetraft/base.h"
#include "jetraft/errors.h"
#include "jetraft/plugins.h"
#include "jetraft/node.h"
#include "jetraft/group.h"
#include "jetraft/cluster.h"
#include "jetraft/stream.h"

#endif /* JETRAFT_H */
