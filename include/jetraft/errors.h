/*
 * jetraft/errors.h — error codes: the stable negative JR_E* values, jr_strerror() and
 * jr_err_name().
 *
 * Codes are never renumbered or reused; new ones are appended to JR_ERRNO_MAP.
 * Part of the public ABI; users include <jetraft.h>, which includes every part.
 */
#ifndef JETRAFT_ERRORS_H
#define JETRAFT_ERRORS_H

#include "jetraft/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------------------------------------------
 * Errors. Values are stable: a code is never renumbered or reused. New codes are appended.
 * Three of them end a write, and say different things about it: JR_ENOQUORUM — it reached no
 * log, nothing took effect (a definite failure); JR_ELEADERLOST and JR_ETIMEDOUT — it may have
 * reached a log (the leader was lost, or did not commit it in time), so it may still take
 * effect.
 */
#define JR_ERRNO_MAP(X)                                                                            \
    X(EINVAL, -1, "invalid argument")                                                              \
    X(ENOMEM, -2, "out of memory")                                                                 \
    X(EIO, -3, "I/O error")                                                                        \
    X(ECORRUPT, -4, "data is corrupt")                                                             \
    X(ENOSPC, -5, "no space left on device")                                                       \
    X(EBUSY, -6, "cluster member change is in progress")                                           \
    X(ENOTLEADER, -7, "not the leader")                                                            \
    X(ENOLEADER, -8, "no leader")                                                                  \
    X(ENOQUORUM, -9, "no quorum")                                                                  \
    X(ELEADERLOST, -10, "leadership lost before the entry committed")                              \
    X(ETRANSFER, -11, "leadership transfer in progress")                                           \
    X(ETIMEDOUT, -12, "timed out")                                                                 \
    X(ECANCELED, -13, "operation canceled")                                                        \
    X(ECLOSED, -14, "node or group is closing")                                                    \
    X(ENOTFOUND, -15, "not found")                                                                 \
    X(EEXIST, -16, "already exists")                                                               \
    X(EVERSION, -17, "unsupported format version")                                                 \
    X(EAUTH, -18, "authentication failed")                                                         \
    X(EMSGSIZE, -19, "message too large")                                                          \
    X(EMISUSE, -20, "API misuse")                                                                  \
    X(ENOTSUP, -21, "not supported")                                                               \
    X(EDAMAGED, -22, "group is damaged and awaiting repair from its peers")                        \
    X(ENORESOURCES, -23, "insufficient resources")                                                 \
    X(ENOSTREAM, -24, "no stream matches subject")                                                 \
    X(ENOTVOTER, -25, "peer is not a caught-up voter")                                             \
    X(ECOMPACTED, -26, "entry compacted away")                                                     \
    X(ERANGE, -27, "value out of range")                                                           \
    X(EWRONGSTREAM, -28, "expected stream does not match")                                         \
    X(EWRONGLASTSEQ, -29, "wrong last sequence")                                                   \
    X(EWRONGLASTSUBJSEQ, -30, "wrong last sequence for subject")                                   \
    X(EWRONGLASTMSGID, -31, "wrong last msg id")                                                   \
    X(ELIMIT, -32, "stream limit reached and discard policy is new")                               \
    X(ESEALED, -33, "stream is sealed")                                                            \
    X(EDENIED, -34, "operation denied by stream configuration")                                    \
    X(EPEERREMAP, -35, "peer remap failed")                                                        \
    X(ENOTMEMBER, -36, "not a member")                                                             \
    X(EREMOVED, -37, "server was removed from the cluster")                                        \
    X(ENOCHANGE, -38, "reconfiguration not in progress")

enum jr_errno {
#define JR__ERR_ENUM(name, value, text) JR_##name = value,
    JR_ERRNO_MAP(JR__ERR_ENUM)
#undef JR__ERR_ENUM
};

/* Returns a static, human-readable description of `err` ("unknown error" for unknown codes). */
JR_API const char *jr_strerror(int err);
/* Returns the code's name without the JR_ prefix, e.g. "EBUSY"; "UNKNOWN" for unknown codes. */
JR_API const char *jr_err_name(int err);

#ifdef __cplusplus
}
#endif
#endif /* JETRAFT_ERRORS_H */
