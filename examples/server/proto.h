/*
 * proto.h — the NATS client protocol, client to server: a strict, bounded, incremental parser.
 *
 * It takes the bytes of a connection as they arrive (any split, commands pipelined) and hands out
 * one operation at a time: CONNECT, PUB, HPUB, SUB, UNSUB, PING, PONG. Operation names are
 * case-insensitive and arguments are separated by runs of spaces or tabs (nats.c sends
 * "SUB subj  1" and "UNSUB 3 "); a control line ends in CRLF (a bare LF is accepted too). It
 * buffers at most one control line (max_line bytes) and one payload (max_payload plus its CRLF):
 * a longer line, a larger payload, an unknown operation, a malformed size, a header size above
 * the total, or a payload not followed by CRLF is an error with the text nats-server sends in
 * its -ERR, after which the connection must be closed.
 */
#ifndef SRV_PROTO_H
#define SRV_PROTO_H

#include <stddef.h>
#include <stdint.h>

enum np_kind { NP_CONNECT = 1, NP_PUB, NP_HPUB, NP_SUB, NP_UNSUB, NP_PING, NP_PONG, NP_INFO };

/* One operation; every pointer is borrowed for the callback, strings are NUL-terminated. */
typedef struct np_op {
    int kind;
    const char *subject; /* PUB, HPUB, SUB */
    const char *reply;   /* PUB, HPUB: NULL when none */
    const char *queue;   /* SUB: NULL when none */
    const char *sid;     /* SUB, UNSUB */
    int64_t max;         /* UNSUB: messages before it takes effect; -1 none */
    const char *arg;     /* CONNECT, INFO: the JSON text */
    size_t arg_len;
    const uint8_t *hdr; /* HPUB: header block (hdr_len bytes, may be 0) */
    size_t hdr_len;
    const uint8_t *data; /* PUB, HPUB: the payload after the headers */
    size_t data_len;
} np_op;

typedef struct np_parser {
    size_t max_line;
    size_t max_payload;
    int in_payload;
    char *line; /* max_line + 1 bytes */
    size_t line_len;
    np_op op;     /* the PUB/HPUB waiting for its payload; its strings point into line */
    size_t total; /* payload bytes announced */
    uint8_t *pl;  /* payload being assembled, with its CRLF */
    size_t pl_len;
    size_t pl_cap;
} np_parser;

/* Returns 0 to go on; anything else stops np_feed, which returns it. */
typedef int (*np_cb)(void *arg, const np_op *op);

int np_init(np_parser *p, size_t max_line, size_t max_payload);
void np_free(np_parser *p);
/* Feeds n bytes, calling cb per complete operation. Returns 0; NP_EPROTO with *err set to the
 * -ERR text (the connection must then be closed); or the callback's non-zero return. *err is
 * NULL unless NP_EPROTO is returned. */
#define NP_EPROTO (-1000)
int np_feed(np_parser *p, const uint8_t *data, size_t n, np_cb cb, void *arg, const char **err);
/* Bytes the parser holds (a partial line or payload): what a connection costs between reads. */
size_t np_buffered(const np_parser *p);

#endif
