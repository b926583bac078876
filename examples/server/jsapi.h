/*
 * jsapi.h — the JetStream API on $JS.API.> and publishes to streams, mapped onto the library's
 * asynchronous stream API.
 *
 * Each request is parsed (jsjson.h), handed to the matching jr_stream_* call, and answered from
 * its callback by publishing JetStream's JSON reply to the request's reply subject (through the
 * subject routing, so a requester that left meanwhile simply gets nothing). A publish to any
 * other subject goes to jr_publish; its PubAck (or JetStream error) goes to the reply subject.
 */
#ifndef SRV_JSAPI_H
#define SRV_JSAPI_H

#include <stddef.h>

#include "server.h"

/* A PUB on $JS.API.<...>. reply may be NULL (then the request is carried out, unanswered). */
void jsapi_request(server *s, const char *subject, const char *reply, const void *hdr,
                   size_t hdr_len, const void *data, size_t len, int no_responders);
/* A PUB to a subject no API handles: stored by the stream that captures it, if any. When no
 * stream does and nr is set, the reply subject gets the 503 no-responders status. */
void jsapi_publish(server *s, const char *subject, const char *reply, const void *hdr,
                   size_t hdr_len, const void *data, size_t len, int nr);
/* A PUB on $JS.ACK.<...>: a consumer's client acknowledging a delivery (+ACK, -NAK, +WPI,
 * +TERM, +NXT). With a reply subject the ack is confirmed (AckSync): an empty message once it
 * is replicated. */
void jsapi_ack(server *s, const char *subject, const char *reply, const void *data, size_t len);
/* A PUB on $SYS.REQ.SERVER.<...> (jsapi_sys.c): answers the server pings (PING, PING.STATSZ,
 * PING.JSZ, <name>.STATSZ, <name>.JSZ) for every server of the cluster and returns 1; 0 for a
 * subject it does not serve. */
int jsapi_sys(server *s, const char *subject, const char *reply);
/* Sends the 503 no-responders status to reply. */
void jsapi_no_responders(server *s, const char *reply);

#endif
