/*
 * stream.c — `jetraft stream ...`: add, edit, info, ls, find, rm, purge, get, view and the
 * cluster verbs, over $JS.API.STREAM.* (cli.h).
 */
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Sets the config fields the add/edit flags name on cfg. 0, or 2 after printing a usage error. */
static int apply_flags(json_t *cfg, const args *a)
{
    const char *v;
    if ((v = arg_flag(a, "subjects"))) {
        json_t *arr = json_array();
        char *copy = strdup(v);
        for (char *save = NULL, *s = strtok_r(copy, ",", &save); s; s = strtok_r(NULL, ",", &save))
            json_array_append_new(arr, json_string(s));
        free(copy);
        json_object_set_new(cfg, "subjects", arr);
    }
    if ((v = arg_flag(a, "replicas")))
        json_object_set_new(cfg, "num_replicas", json_integer(arg_int(a, "replicas", 1)));
    if ((v = arg_flag(a, "storage"))) {
        if (strcmp(v, "file") && strcmp(v, "memory")) {
            fprintf(stderr, "jetraft: --storage is file or memory\n");
            return 2;
        }
        json_object_set_new(cfg, "storage", json_string(v));
    }
    if ((v = arg_flag(a, "retention"))) {
        if (strcmp(v, "limits") && strcmp(v, "interest") && strcmp(v, "workqueue")) {
            fprintf(stderr, "jetraft: --retention is limits, interest or workqueue\n");
            return 2;
        }
        json_object_set_new(cfg, "retention", json_string(v));
    }
    if ((v = arg_flag(a, "discard"))) {
        if (strcmp(v, "old") && strcmp(v, "new")) {
            fprintf(stderr, "jetraft: --discard is old or new\n");
            return 2;
        }
        json_object_set_new(cfg, "discard", json_string(v));
    }
    if (arg_flag(a, "max-msgs"))
        json_object_set_new(cfg, "max_msgs", json_integer(arg_int(a, "max-msgs", -1)));
    if (arg_flag(a, "max-bytes"))
        json_object_set_new(cfg, "max_bytes", json_integer(arg_int(a, "max-bytes", -1)));
    if (arg_flag(a, "max-age"))
        json_object_set_new(cfg, "max_age", json_integer(arg_duration(a, "max-age", 0)));
    if (arg_flag(a, "dupe-window"))
        json_object_set_new(cfg, "duplicate_window",
                            json_integer(arg_duration(a, "dupe-window", 0)));
    if (arg_bool(a, "allow-direct")) json_object_set_new(cfg, "allow_direct", json_true());
    if ((v = arg_flag(a, "tag"))) {
        json_t *tags = json_array();
        char *copy = strdup(v);
        for (char *save = NULL, *s = strtok_r(copy, ",", &save); s; s = strtok_r(NULL, ",", &save))
            json_array_append_new(tags, json_string(s));
        free(copy);
        json_t *pl = json_object();
        json_object_set_new(pl, "tags", tags);
        json_object_set_new(cfg, "placement", pl);
    }
    return 0;
}

static const char *str_or(const json_t *o, const char *key, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : dflt;
}

static void print_limit(const char *label, const json_t *cfg, const char *key, int bytes)
{
    json_int_t v = json_integer_value(json_object_get(cfg, key));
    char buf[48];
    if (v <= 0)
        snprintf(buf, sizeof buf, "unlimited");
    else if (bytes)
        fmt_bytes(buf, sizeof buf, (uint64_t)v);
    else
        fmt_int(buf, sizeof buf, (int64_t)v);
    printf("%21s: %s\n", label, buf);
}

/* The nats CLI's `stream info` text: configuration, cluster, state. */
static void print_info(const json_t *info)
{
    const json_t *cfg = json_object_get(info, "config");
    printf("Information for Stream %s created %s\n\n", str_or(cfg, "name", "?"),
           str_or(info, "created", "?"));
    const json_t *subj = json_object_get(cfg, "subjects");
    size_t i;
    json_t *s;
    char line[1024];
    size_t k = 0;
    line[0] = 0;
    json_array_foreach(subj, i, s) k +=
        (size_t)snprintf(line + k, k < sizeof line ? sizeof line - k : 0, "%s%s", i ? ", " : "",
                         json_string_value(s) ? json_string_value(s) : "");
    printf("%21s: %s\n", "Subjects", line);
    printf("%21s: %" JSON_INTEGER_FORMAT "\n", "Replicas",
           json_integer_value(json_object_get(cfg, "num_replicas")));
    const char *st = str_or(cfg, "storage", "file");
    printf("%21s: %s\n", "Storage", !strcmp(st, "memory") ? "Memory" : "File");
    printf("\nOptions:\n\n");
    const char *ret = str_or(cfg, "retention", "limits");
    printf("%21s: %s\n", "Retention",
           !strcmp(ret, "interest")    ? "Interest"
           : !strcmp(ret, "workqueue") ? "WorkQueue"
                                       : "Limits");
    char d[48];
    fmt_duration(d, sizeof d,
                 (int64_t)json_integer_value(json_object_get(cfg, "duplicate_window")));
    printf("%21s: %s\n", "Duplicate Window", d);
    printf("%21s: %s\n", "Direct Get",
           json_is_true(json_object_get(cfg, "allow_direct")) ? "true" : "false");
    printf("%21s: %s\n", "Discard Policy",
           !strcmp(str_or(cfg, "discard", "old"), "new") ? "New" : "Old");
    printf("\nLimits:\n\n");
    print_limit("Maximum Messages", cfg, "max_msgs", 0);
    print_limit("Maximum Bytes", cfg, "max_bytes", 1);
    json_int_t age = json_integer_value(json_object_get(cfg, "max_age"));
    if (age > 0)
        fmt_duration(d, sizeof d, (int64_t)age);
    else
        snprintf(d, sizeof d, "unlimited");
    printf("%21s: %s\n", "Maximum Age", d);
    print_limit("Maximum Message Size", cfg, "max_msg_size", 1);
    print_limit("Maximum Consumers", cfg, "max_consumers", 0);
    printf("\n");
    print_cluster(stdout, json_object_get(info, "cluster"));
    const json_t *state = json_object_get(info, "state");
    printf("State:\n\n");
    char n[48];
    fmt_int(n, sizeof n, (int64_t)json_integer_value(json_object_get(state, "messages")));
    printf("%21s: %s\n", "Messages", n);
    fmt_bytes(n, sizeof n, (uint64_t)json_integer_value(json_object_get(state, "bytes")));
    printf("%21s: %s\n", "Bytes", n);
    fmt_int(n, sizeof n, (int64_t)json_integer_value(json_object_get(state, "first_seq")));
    printf("%21s: %s @ %s\n", "First Sequence", n, str_or(state, "first_ts", "-"));
    fmt_int(n, sizeof n, (int64_t)json_integer_value(json_object_get(state, "last_seq")));
    printf("%21s: %s @ %s\n", "Last Sequence", n, str_or(state, "last_ts", "-"));
    json_int_t del = json_integer_value(json_object_get(state, "num_deleted"));
    if (del) {
        fmt_int(n, sizeof n, (int64_t)del);
        printf("%21s: %s\n", "Deleted Messages", n);
    }
    fmt_int(n, sizeof n, (int64_t)json_integer_value(json_object_get(state, "consumer_count")));
    printf("%21s: %s\n", "Active Consumers", n);
    json_int_t ns = json_integer_value(json_object_get(state, "num_subjects"));
    if (ns) {
        fmt_int(n, sizeof n, (int64_t)ns);
        printf("%21s: %s\n", "Number of Subjects", n);
    }
}

static json_t *stream_info(cli *c, const char *name)
{
    char subj[300];
    snprintf(subj, sizeof subj, "STREAM.INFO.%s", name);
    return api(c, subj, NULL);
}

static int show(cli *c, json_t *info)
{
    if (c->json)
        print_json(info);
    else
        print_info(info);
    json_decref(info);
    return 0;
}

static int need(const char *v, const char *what)
{
    if (v) return 0;
    fprintf(stderr, "jetraft: %s is required\n", what);
    return 2;
}

static int stream_add(cli *c, args *a, int edit)
{
    const char *name = arg_pos(a, 0);
    if (need(name, "the stream name")) return 2;
    json_t *cfg;
    if (edit) {
        json_t *info = stream_info(c, name);
        if (!info) return 1;
        cfg = json_deep_copy(json_object_get(info, "config"));
        json_decref(info);
    } else {
        if (!arg_flag(a, "subjects")) {
            fprintf(stderr, "jetraft: --subjects is required\n");
            return 2;
        }
        cfg =
            json_pack("{s:s,s:s,s:s,s:s,s:i,s:i,s:i,s:i,s:i,s:i}", "name", name, "retention",
                      "limits", "storage", "file", "discard", "old", "num_replicas", 1, "max_msgs",
                      -1, "max_bytes", -1, "max_consumers", -1, "max_msg_size", -1, "max_age", 0);
    }
    if (!cfg) {
        fprintf(stderr, "jetraft: the stream has no configuration to edit\n");
        return 1;
    }
    int rc = apply_flags(cfg, a);
    if (rc) {
        json_decref(cfg);
        return rc;
    }
    char subj[300];
    snprintf(subj, sizeof subj, "STREAM.%s.%s", edit ? "UPDATE" : "CREATE", name);
    json_t *info = api(c, subj, cfg);
    json_decref(cfg);
    if (!info) return 1;
    if (!c->json) printf("Stream %s was %s\n\n", name, edit ? "updated" : "created");
    return show(c, info);
}

/* Walks STREAM.LIST pages; cb gets each stream info. */
static int for_each_stream(cli *c, void (*cb)(void *, const json_t *), void *arg)
{
    for (json_int_t offset = 0;;) {
        json_t *body = json_pack("{s:I}", "offset", offset);
        json_t *page = api(c, "STREAM.LIST", body);
        json_decref(body);
        if (!page) return 1;
        json_t *list = json_object_get(page, "streams");
        size_t i, n = json_array_size(list);
        json_t *s;
        json_array_foreach(list, i, s) cb(arg, s);
        json_int_t total = json_integer_value(json_object_get(page, "total"));
        json_decref(page);
        offset += (json_int_t)n;
        if (n == 0 || offset >= total) return 0;
    }
}

typedef struct lsctx {
    cli *c;
    json_t *all;
    int64_t replicas; /* find: only these (0: all) */
    int rows;
} lsctx;

static void ls_row(void *arg, const json_t *s)
{
    lsctx *x = arg;
    const json_t *cfg = json_object_get(s, "config"), *st = json_object_get(s, "state");
    if (x->replicas && json_integer_value(json_object_get(cfg, "num_replicas")) != x->replicas)
        return;
    x->rows++;
    if (x->c->json) {
        json_array_append(x->all, (json_t *)s);
        return;
    }
    char m[48], b[48];
    fmt_int(m, sizeof m, (int64_t)json_integer_value(json_object_get(st, "messages")));
    fmt_bytes(b, sizeof b, (uint64_t)json_integer_value(json_object_get(st, "bytes")));
    if (x->rows == 1) printf("%-24s %8s %14s %12s\n", "Name", "Replicas", "Messages", "Size");
    printf("%-24s %8" JSON_INTEGER_FORMAT " %14s %12s\n", str_or(cfg, "name", "?"),
           json_integer_value(json_object_get(cfg, "num_replicas")), m, b);
}

static int stream_ls(cli *c, args *a, int find)
{
    lsctx x = {c, json_array(), find ? arg_int(a, "replicas", 0) : 0, 0};
    if (find && !x.replicas) {
        fprintf(stderr, "jetraft: stream find needs --replicas N\n");
        json_decref(x.all);
        return 2;
    }
    int rc = for_each_stream(c, ls_row, &x);
    if (!rc && c->json) print_json(x.all);
    if (!rc && !c->json && x.rows == 0) printf("No streams%s\n", find ? " match" : " defined");
    json_decref(x.all);
    return rc;
}

/* Sends $JS.API.<op>.<name>; with --json prints the answer. Returns it (the caller prints its
 * text and frees it), or NULL after api() printed why. */
static json_t *simple(cli *c, const char *op, const char *name, json_t *body)
{
    char subj[300];
    snprintf(subj, sizeof subj, "%s.%s", op, name);
    json_t *r = api(c, subj, body);
    if (r && c->json) print_json(r);
    return r;
}

/* Prints what a verb did unless --json printed the answer; 0, or 1 if r is NULL. */
static int done(cli *c, json_t *r, const char *what, const char *name)
{
    if (!r) return 1;
    if (!c->json) printf("%s %s\n", what, name);
    json_decref(r);
    return 0;
}

/* Prints one stored message as `nats stream get` does; 0, or 1 after printing why. */
static int print_msg(cli *c, const json_t *r)
{
    if (c->json) {
        print_json(r);
        return 0;
    }
    const json_t *m = json_object_get(r, "message");
    const char *data = str_or(m, "data", ""), *hdrs = json_string_value(json_object_get(m, "hdrs"));
    size_t cap = strlen(data) + 1, hcap = hdrs ? strlen(hdrs) + 1 : 1, len = 0, hlen = 0;
    unsigned char *bin = malloc(cap), *hbin = malloc(hcap);
    if (!bin || !hbin ||
        sodium_base642bin(bin, cap, data, strlen(data), NULL, &len, NULL,
                          sodium_base64_VARIANT_ORIGINAL) != 0 ||
        (hdrs && sodium_base642bin(hbin, hcap, hdrs, strlen(hdrs), NULL, &hlen, NULL,
                                   sodium_base64_VARIANT_ORIGINAL) != 0)) {
        fprintf(stderr, "jetraft: error: the message's data is not valid base64\n");
        free(bin);
        free(hbin);
        return 1;
    }
    printf("Item: %s#%" JSON_INTEGER_FORMAT " received %s on Subject %s\n\n",
           str_or(r, "stream", ""), json_integer_value(json_object_get(m, "seq")),
           str_or(m, "time", "?"), str_or(m, "subject", "?"));
    if (hlen) {
        /* "NATS/1.0\r\nKey: Value\r\n...\r\n\r\n": one header per line */
        printf("Headers:\n");
        const char *p = (const char *)hbin, *end = p + hlen;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
        while (p < end) {
            nl = memchr(p, '\n', (size_t)(end - p));
            size_t l = (size_t)((nl ? nl : end) - p);
            if (l && p[l - 1] == '\r') l--;
            if (l) printf("  %.*s\n", (int)l, p);
            p = nl ? nl + 1 : end;
        }
        printf("\n");
    }
    fwrite(bin, 1, len, stdout);
    printf("\n");
    free(bin);
    free(hbin);
    return 0;
}

static int stream_get(cli *c, const char *name, uint64_t seq, int quiet_gap)
{
    char subj[300];
    snprintf(subj, sizeof subj, "STREAM.MSG.GET.%s", name);
    json_t *body = json_pack("{s:I}", "seq", (json_int_t)seq);
    char req[128];
    char *txt = json_dumps(body, JSON_COMPACT);
    snprintf(req, sizeof req, "%s", txt ? txt : "{}");
    free(txt);
    json_decref(body);
    /* a gap (deleted message) is not an error for view: ask without api()'s report */
    natsMsg *reply = NULL;
    char full[320];
    snprintf(full, sizeof full, "$JS.API.%s", subj);
    if (natsConnection_RequestString(&reply, c->nc, full, req, c->timeout_ms) != NATS_OK) {
        fprintf(stderr, "jetraft: error: %s: no answer\n", full);
        return 1;
    }
    json_t *r = json_loadb(natsMsg_GetData(reply), (size_t)natsMsg_GetDataLength(reply), 0, NULL);
    natsMsg_Destroy(reply);
    json_t *err = json_object_get(r, "error");
    if (!r || err) {
        if (!quiet_gap || !err || json_integer_value(json_object_get(err, "code")) != 404)
            fprintf(stderr, "jetraft: error: %s\n",
                    err ? str_or(err, "description", "?") : "the answer is not JSON");
        json_decref(r);
        return quiet_gap && err ? 0 : 1;
    }
    json_object_set_new(r, "stream", json_string(name));
    int rc = print_msg(c, r);
    json_decref(r);
    return rc;
}

static int stream_view(cli *c, args *a)
{
    const char *name = arg_pos(a, 0);
    if (need(name, "the stream name")) return 2;
    json_t *info = stream_info(c, name);
    if (!info) return 1;
    const json_t *st = json_object_get(info, "state");
    uint64_t first = (uint64_t)json_integer_value(json_object_get(st, "first_seq"));
    uint64_t last = (uint64_t)json_integer_value(json_object_get(st, "last_seq"));
    json_decref(info);
    int64_t count = arg_int(a, "count", 10);
    int rc = 0;
    for (uint64_t s = first; s && s <= last && count > 0 && !rc; s++, count--) {
        rc = stream_get(c, name, s, 1);
        if (!c->json) printf("\n");
    }
    return rc;
}

static int by_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* `stream subjects NAME [FILTER]`: every subject of the stream the filter matches with its
 * message count (STREAM.INFO with subjects_filter, asked again from the next offset while the
 * answers hold fewer than the total), sorted; --json prints the subject -> count object. */
static int stream_subjects(cli *c, args *a)
{
    const char *name = arg_pos(a, 0), *filter = arg_pos(a, 1);
    if (need(name, "the stream name")) return 2;
    json_t *all = json_object();
    uint64_t total = 0;
    do {
        char subj[300];
        snprintf(subj, sizeof subj, "STREAM.INFO.%s", name);
        json_t *body = json_pack("{s:s,s:I}", "subjects_filter", filter ? filter : ">", "offset",
                                 (json_int_t)json_object_size(all));
        json_t *r = api(c, subj, body);
        json_decref(body);
        if (!r) {
            json_decref(all);
            return 1;
        }
        json_t *page = json_object_get(json_object_get(r, "state"), "subjects");
        total = (uint64_t)json_integer_value(json_object_get(r, "total"));
        size_t before = json_object_size(all);
        json_object_update(all, page);
        json_decref(r);
        if (json_object_size(all) == before) break; /* nothing more came */
    } while (json_object_size(all) < total);
    if (c->json) {
        print_json(all);
        json_decref(all);
        return 0;
    }
    size_t n = json_object_size(all), i = 0;
    const char **keys = n ? calloc(n, sizeof *keys) : NULL;
    const char *k;
    json_t *v;
    json_object_foreach(all, k, v)
    {
        if (keys) keys[i++] = k;
    }
    if (keys) qsort(keys, n, sizeof *keys, by_key);
    printf("%zu subjects in stream %s%s%s\n\n", n, name, filter ? " matching " : "",
           filter ? filter : "");
    for (i = 0; keys && i < n; i++)
        printf("%s: %" JSON_INTEGER_FORMAT "\n", keys[i],
               json_integer_value(json_object_get(all, keys[i])));
    free(keys);
    json_decref(all);
    return 0;
}

/* Prints the cluster block of a move's answer (the stream's info) unless --json printed it. */
static int moved(cli *c, json_t *r, const char *what, const char *name)
{
    if (!r) return 1;
    if (!c->json) {
        printf("%s %s\n\n", what, name);
        print_cluster(stdout, json_object_get(r, "cluster"));
    }
    json_decref(r);
    return 0;
}

/* `stream cluster step-down|peer-remove|evacuate|move|cancel-move ...` */
static int stream_cluster(cli *c, args *a)
{
    const char *sub = arg_pos(a, 0);
    const char *sname = arg_pos(a, 1);
    if (need(sub, "step-down, peer-remove, evacuate, move or cancel-move") ||
        need(sname, "the stream name"))
        return 2;
    if (!strcmp(sub, "step-down")) {
        json_t *body = NULL;
        const char *peer = arg_flag(a, "peer");
        if (peer) body = json_pack("{s:{s:s}}", "placement", "preferred", peer);
        json_t *r = simple(c, "STREAM.LEADER.STEPDOWN", sname, body);
        json_decref(body);
        return done(c, r, "Requested a leader change for stream", sname);
    }
    if (!strcmp(sub, "peer-remove") || !strcmp(sub, "evacuate")) {
        const char *peer = arg_pos(a, 2);
        if (need(peer, "the peer")) return 2;
        int rm = sub[0] == 'p';
        json_t *body = json_pack("{s:s}", "peer", peer);
        json_t *r = simple(c, rm ? "STREAM.PEER.REMOVE" : "STREAM.PEER.EVACUATE", sname, body);
        json_decref(body);
        if (r && !c->json)
            printf("%s %s %s stream %s: a replacement takes over its replica\n",
                   rm ? "Removing peer" : "Evacuating peer", peer, rm ? "from" : "of", sname);
        json_decref(r);
        return r ? 0 : 1;
    }
    if (!strcmp(sub, "move")) {
        /* $JS.API.ACCOUNT.STREAM.MOVE.<account>.<stream>; jetraft-server has no accounts and
         * nats-server's default one is $G */
        json_t *body = json_object();
        const char *v;
        if ((v = arg_flag(a, "from"))) json_object_set_new(body, "server", json_string(v));
        if ((v = arg_flag(a, "cluster"))) json_object_set_new(body, "cluster", json_string(v));
        if ((v = arg_flag(a, "tag"))) {
            json_t *tags = json_array();
            char *copy = strdup(v);
            for (char *save = NULL, *t = strtok_r(copy, ",", &save); t;
                 t = strtok_r(NULL, ",", &save))
                json_array_append_new(tags, json_string(t));
            free(copy);
            json_object_set_new(body, "tags", tags);
        }
        if (!json_object_size(body)) {
            json_decref(body);
            fprintf(stderr, "jetraft: stream cluster move needs --from, --cluster or --tag\n");
            return 2;
        }
        json_t *r = simple(c, "ACCOUNT.STREAM.MOVE.$G", sname, body);
        json_decref(body);
        return moved(c, r, "Moving stream", sname);
    }
    if (!strcmp(sub, "cancel-move")) {
        json_t *r = simple(c, "ACCOUNT.STREAM.CANCEL_MOVE.$G", sname, NULL);
        return moved(c, r, "Cancelled the peer change of stream", sname);
    }
    fprintf(stderr,
            "jetraft: unknown stream cluster verb '%s' (step-down, peer-remove, evacuate, "
            "move, cancel-move)\n",
            sub);
    return 2;
}

int cmd_stream(cli *c, const char *verb, args *a)
{
    const char *name = arg_pos(a, 0);
    if (!strcmp(verb, "add") || !strcmp(verb, "create")) return stream_add(c, a, 0);
    if (!strcmp(verb, "edit") || !strcmp(verb, "update")) return stream_add(c, a, 1);
    if (!strcmp(verb, "ls") || !strcmp(verb, "list")) return stream_ls(c, a, 0);
    if (!strcmp(verb, "find")) return stream_ls(c, a, 1);
    if (!strcmp(verb, "view")) return stream_view(c, a);
    if (!strcmp(verb, "subjects")) return stream_subjects(c, a);
    if (!strcmp(verb, "info")) {
        if (need(name, "the stream name")) return 2;
        json_t *info = stream_info(c, name);
        return info ? show(c, info) : 1;
    }
    if (!strcmp(verb, "rm") || !strcmp(verb, "delete")) {
        if (need(name, "the stream name")) return 2;
        return done(c, simple(c, "STREAM.DELETE", name, NULL), "Deleted stream", name);
    }
    if (!strcmp(verb, "purge")) {
        if (need(name, "the stream name")) return 2;
        json_t *body = json_object();
        const char *v = arg_flag(a, "subject");
        if (v) json_object_set_new(body, "filter", json_string(v));
        if (arg_flag(a, "seq"))
            json_object_set_new(body, "seq", json_integer(arg_int(a, "seq", 0)));
        if (arg_flag(a, "keep"))
            json_object_set_new(body, "keep", json_integer(arg_int(a, "keep", 0)));
        json_t *r = simple(c, "STREAM.PURGE", name, body);
        json_decref(body);
        if (r && !c->json)
            printf("Purged %" JSON_INTEGER_FORMAT " messages from %s\n",
                   json_integer_value(json_object_get(r, "purged")), name);
        json_decref(r);
        return r ? 0 : 1;
    }
    if (!strcmp(verb, "get")) {
        const char *seq = arg_pos(a, 1);
        if (need(name, "the stream name") || need(seq, "the sequence")) return 2;
        char *end;
        unsigned long long s = strtoull(seq, &end, 10);
        if (*end || s == 0) {
            fprintf(stderr, "jetraft: '%s' is not a sequence\n", seq);
            return 2;
        }
        return stream_get(c, name, s, 0);
    }
    if (!strcmp(verb, "cluster")) return stream_cluster(c, a);
    fprintf(stderr,
            "jetraft: unknown stream verb '%s' (add, edit, info, ls, find, rm, purge, "
            "get, view, subjects, cluster)\n",
            verb);
    return 2;
}
