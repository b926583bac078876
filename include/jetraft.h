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
 *  - Handles are opaque. Every public struct that may grow starts with a `size` field, and
 *    fields are only ever appended, so an older caller keeps working against a newer library:
 *     - structs the caller fills (configs, options, placement) carry the caller's sizeof; the
 *       jr_*_init() macros set it (they pass sizeof to the jr_*_init_size() functions, which
 *       write no byte past it); the library reads no byte past it, and fields the caller did
 *       not know keep their defaults;
 *     - structs the library fills on request (status, stats) carry the caller's size in and
 *       the size written out;
 *     - structs handed to callbacks (info, acks, messages) carry the size the library built
 *       them with; a caller reads only the fields that size covers.
 *    No struct that may grow is embedded in another or laid out in an array: it is reached
 *    through a pointer, and a list of them is an array of pointers. jr_iovec and jr_kv are
 *    frozen (they never grow) and may be array elements.
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
#include "jetraft/consumer.h"
#include "jetraft/health.h"
#include "jetraft/link.h"

#endif /* JETRAFT_H */
