/*
 * util.c — the CLI's argument helpers, its JetStream API request, and the formats every verb
 * prints with (cli.h).
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ---- arguments ------------------------------------------------------------------------------ */

/* Index of --name (or --name=...) in a, or -1; *inline_val gets the part after '=' if any. */
static int find_flag(const args *a, const char *name, const char **inline_val)
{
    size_t nl = strlen(name);
    for (int i = 0; i < a->argc; i++) {
        const char *s = a->argv[i];
        if (strncmp(s, "--", 2) || strncmp(s + 2, name, nl)) continue;
        if (s[2 + nl] == 0) {
            *inline_val = NULL;
            return i;
        }
        if (s[2 + nl] == '=') {
            *inline_val = s + 3 + nl;
            return i;
        }
    }
    return -1;
}

const char *arg_flag(const args *a, const char *name)
{
    const char *v;
    int i = find_flag(a, name, &v);
    if (i < 0) return NULL;
    if (v) return v;
    if (i + 1 >= a->argc) {
        fprintf(stderr, "jetraft: --%s needs a value\n", name);
        exit(2);
    }
    return a->argv[i + 1];
}

int arg_bool(const args *a, const char *name)
{
    const char *v;
    return find_flag(a, name, &v) >= 0;
}

/* Flags that take no value (their next argument is positional). */
static int is_bool_flag(const char *s)
{
    static const char *const b[] = {"--defaults", "--allow-direct", "--no-ack", "--pull",
                                    "--force",    "--json",         "--cancel", NULL};
    for (int i = 0; b[i]; i++)
        if (!strcmp(s, b[i])) return 1;
    return 0;
}

const char *arg_pos(const args *a, int want)
{
    int k = 0;
    for (int i = 0; i < a->argc; i++) {
        const char *s = a->argv[i];
        if (!strncmp(s, "--", 2)) {
            if (!strchr(s, '=') && !is_bool_flag(s)) i++; /* its value */
            continue;
        }
        if (k++ == want) return s;
    }
    return NULL;
}

int64_t arg_int(const args *a, const char *name, int64_t dflt)
{
    const char *v = arg_flag(a, name);
    if (!v) return dflt;
    char *end;
    long long n = strtoll(v, &end, 10);
    int64_t mul = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K':
        mul = 1024, end++;
        break;
    case 'M':
        mul = 1024 * 1024, end++;
        break;
    case 'G':
        mul = 1024 * 1024 * 1024, end++;
        break;
    default:
        break;
    }
    if (end == v || *end || n < -1 || (n > 0 && n > INT64_MAX / mul)) {
        fprintf(stderr, "jetraft: --%s: '%s' is not a number\n", name, v);
        exit(2);
    }
    return n * mul;
}

int64_t arg_duration(const args *a, const char *name, int64_t dflt)
{
    const char *v = arg_flag(a, name);
    if (!v) return dflt;
    char *end;
    double n = strtod(v, &end);
    double unit = 1e9;
    if (!strcmp(end, "ms"))
        unit = 1e6;
    else if (!strcmp(end, "s") || !*end)
        unit = 1e9;
    else if (!strcmp(end, "m"))
        unit = 60e9;
    else if (!strcmp(end, "h"))
        unit = 3600e9;
    else if (!strcmp(end, "d"))
        unit = 86400e9;
    else
        end = (char *)v;
    if (end == v || n < 0 || n * unit > 9.2e18) {
        fprintf(stderr, "jetraft: --%s: '%s' is not a duration (e.g. 500ms, 2s, 1h, 7d)\n", name,
                v);
        exit(2);
    }
    return (int64_t)(n * unit);
}

/* ---- the API -------------------------------------------------------------------------------- */

void request_failed(cli *c, const char *subject, natsStatus s)
{
    const char *last = NULL;
    /* A publish the server refuses (-ERR 'Permissions Violation ...') leaves the request to
     * time out; the connection's last error says why. */
    if (natsConnection_GetLastError(c->nc, &last) == NATS_NOT_PERMITTED && last) {
        fprintf(stderr, "jetraft: error: %s: %s (cluster operations need a system user)\n", subject,
                last);
        return;
    }
    fprintf(stderr, "jetraft: error: %s: %s\n", subject, natsStatus_GetText(s));
}

json_t *api(cli *c, const char *subject, json_t *body)
{
    char subj[512];
    snprintf(subj, sizeof subj, "$JS.API.%s", subject);
    char *txt = body ? json_dumps(body, JSON_COMPACT) : NULL;
    natsMsg *reply = NULL;
    natsStatus s = natsConnection_RequestString(&reply, c->nc, subj, txt ? txt : "", c->timeout_ms);
    free(txt);
    if (s == NATS_NO_RESPONDERS) {
        fprintf(stderr, "jetraft: error: no JetStream responders for %s (is JetStream enabled?)\n",
                subj);
        return NULL;
    }
    if (s != NATS_OK) {
        request_failed(c, subj, s);
        return NULL;
    }
    json_error_t je;
    json_t *j = json_loadb(natsMsg_GetData(reply), (size_t)natsMsg_GetDataLength(reply), 0, &je);
    natsMsg_Destroy(reply);
    if (!json_is_object(j)) {
        fprintf(stderr, "jetraft: error: %s answered something that is not a JSON object\n", subj);
        json_decref(j);
        return NULL;
    }
    json_t *err = json_object_get(j, "error");
    if (err) {
        const char *d = json_string_value(json_object_get(err, "description"));
        fprintf(stderr,
                "jetraft: error: %s (code %" JSON_INTEGER_FORMAT ", err_code %" JSON_INTEGER_FORMAT
                ")\n",
                d ? d : "unknown error", json_integer_value(json_object_get(err, "code")),
                json_integer_value(json_object_get(err, "err_code")));
        if (c->json) print_json(j); /* scripts see the API's error object too */
        json_decref(j);
        return NULL;
    }
    return j;
}

void print_json(const json_t *j)
{
    char *txt = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (txt) puts(txt);
    free(txt);
}

/* ---- formats -------------------------------------------------------------------------------- */

void fmt_int(char *buf, size_t cap, int64_t v)
{
    char d[32];
    int k = snprintf(d, sizeof d, "%" PRId64, v < 0 ? -v : v);
    size_t o = 0;
    if (v < 0 && o + 1 < cap) buf[o++] = '-';
    for (int i = 0; i < k && o + 2 < cap; i++) {
        if (i > 0 && (k - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = d[i];
    }
    buf[o] = 0;
}

void fmt_bytes(char *buf, size_t cap, uint64_t v)
{
    static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double x = (double)v;
    int i = 0;
    while (x >= 1024 && i < 5) x /= 1024, i++;
    if (i == 0)
        snprintf(buf, cap, "%" PRIu64 " B", v);
    else
        snprintf(buf, cap, "%.1f %s", x, u[i]);
}

void fmt_duration(char *buf, size_t cap, int64_t ns)
{
    int64_t s = ns / 1000000000, m = s / 60, h = m / 60, d = h / 24;
    if (d > 0)
        snprintf(buf, cap, "%" PRId64 "d%" PRId64 "h%" PRId64 "m%" PRId64 "s", d, h % 24, m % 60,
                 s % 60);
    else if (h > 0)
        snprintf(buf, cap, "%" PRId64 "h%" PRId64 "m%" PRId64 "s", h, m % 60, s % 60);
    else if (m > 0)
        snprintf(buf, cap, "%" PRId64 "m%" PRId64 "s", m, s % 60);
    else
        snprintf(buf, cap, "%.2fs", (double)ns / 1e9);
}

static const char *sv(const json_t *o, const char *key, const char *dflt)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : dflt;
}

void print_cluster(FILE *out, const json_t *cl)
{
    if (!json_is_object(cl)) return;
    const char *name = json_string_value(json_object_get(cl, "name"));
    if (!name || !*name) return;
    fprintf(out, "Cluster Information:\n\n");
    fprintf(out, "%21s: %s\n", "Name", name);
    const char *group = json_string_value(json_object_get(cl, "raft_group"));
    if (group) fprintf(out, "%21s: %s\n", "Cluster Group", group);
    const char *leader = json_string_value(json_object_get(cl, "leader"));
    fprintf(out, "%21s: %s\n", "Leader", leader ? leader : "");
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(cl, "replicas"), i, r)
    {
        /* written in pieces, so no name is too long for a line buffer */
        const char *n = json_string_value(json_object_get(r, "name"));
        fprintf(out, "%21s: %s%s, %s", "Replica", n ? n : "?",
                json_is_true(json_object_get(r, "pending")) ? " (pending)" : "",
                json_is_true(json_object_get(r, "current")) ? "current" : "outdated");
        if (json_is_true(json_object_get(r, "damaged"))) fprintf(out, ", damaged");
        if (json_is_true(json_object_get(r, "unvouched"))) fprintf(out, ", unvouched");
        if (json_is_true(json_object_get(r, "fsm_failed")))
            fprintf(out, "%s",
                    json_is_true(json_object_get(r, "fsm_rebuilding"))
                        ? ", state machine rebuilding"
                        : ", state machine failed");
        if (json_is_true(json_object_get(r, "offline"))) fprintf(out, ", OFFLINE");
        if (json_is_true(json_object_get(r, "observer"))) fprintf(out, ", observer");
        json_t *active = json_object_get(r, "active");
        if (json_is_integer(active)) {
            char d[32];
            fmt_duration(d, sizeof d, (int64_t)json_integer_value(active));
            fprintf(out, ", seen %s ago", d);
        }
        json_int_t lag = json_integer_value(json_object_get(r, "lag"));
        if (lag > 0) {
            char l[32];
            fmt_int(l, sizeof l, (int64_t)lag);
            fprintf(out, ", %s operation%s behind", l, lag == 1 ? "" : "s");
        }
        fprintf(out, "\n");
    }
    fprintf(out, "\n");
    const json_t *d = json_object_get(cl, "desired");
    if (!json_is_object(d)) return;
    const json_t *st = json_object_get(d, "status");
    fprintf(out, "Migration Information:\n\n");
    fprintf(out, "%21s: %s\n", "Status", sv(st, "type", ""));
    fprintf(out, "%21s: %s\n", "Description", sv(st, "description", ""));
    const char *err = json_string_value(json_object_get(st, "err"));
    if (err) fprintf(out, "%21s: %s\n", "Error", err);
    const char *label[] = {"Target Peers", "Origin Peers"};
    const json_t *sets[] = {json_object_get(d, "replicas"),
                            json_object_get(json_object_get(d, "origin"), "peers")};
    for (int k = 0; k < 2; k++) {
        if (!json_is_array(sets[k])) continue;
        char names[512] = "";
        size_t o = 0;
        json_array_foreach(sets[k], i, r) o +=
            (size_t)snprintf(names + o, o < sizeof names ? sizeof names - o : 0, "%s%s",
                             i ? ", " : "", sv(r, "name", "?"));
        fprintf(out, "%21s: %s\n", label[k], names);
    }
    fprintf(out, "\n");
}
