/* calls — completion callbacks that record into a t_call (calls.h). */
#include "calls.h"

#include <string.h>

void t_on_done(void *arg, int status, const char *msg)
{
    t_call *c = arg;
    (void)msg;
    c->done = 1;
    c->status = status;
}

void t_on_pub(void *arg, int status, const jr_pub_ack *ack)
{
    t_call *c = arg;
    c->done = 1;
    c->status = status;
    c->seq = status == 0 ? ack->seq : 0;
}

void t_on_msg(void *arg, int status, const char *msg, const jr_stored_msg *m)
{
    t_call *c = arg;
    (void)msg;
    c->done = 1;
    c->status = status;
    if (status == 0) {
        c->seq = m->seq;
        c->len = m->len < sizeof c->data ? m->len : sizeof c->data;
        memcpy(c->data, m->data, c->len);
    }
}
