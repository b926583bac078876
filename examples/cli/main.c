/*
 * main.c — `jetraft`: global options, the connection, and the noun/verb dispatch (cli.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f)
{
    fputs("usage: jetraft [--server URLS] [--user U --password P] [--json] [--timeout D]\n"
          "               NOUN VERB [ARGS]\n"
          "\n"
          "  stream add NAME --subjects S[,S] [--replicas N] [--storage file|memory]\n"
          "             [--retention limits|interest|workqueue] [--discard old|new]\n"
          "             [--max-msgs N] [--max-bytes N] [--max-age D] [--dupe-window D]\n"
          "             [--tag T[,T]] [--allow-direct] [--defaults]\n"
          "  stream edit NAME [the add flags to change]\n"
          "  stream info NAME | ls | find --replicas N | rm NAME\n"
          "  stream purge NAME [--subject S] [--seq N] [--keep N]\n"
          "  stream get NAME SEQ | view NAME [--count N] | subjects NAME [FILTER]\n"
          "  stream cluster step-down NAME [--peer P] | peer-remove NAME PEER\n"
          "                 | evacuate NAME PEER | cancel-move NAME\n"
          "                 | move NAME [--from SERVER] [--cluster C] [--tag T[,T]]\n"
          "  consumer add STREAM NAME [--filter S] [--ack explicit|none|all]\n"
          "               [--deliver all|new|last] [--replicas N] [--max-deliver N] [--wait D]\n"
          "  consumer info STREAM NAME | ls STREAM | rm STREAM NAME\n"
          "  consumer next STREAM NAME [--count N] [--no-ack]\n"
          "  consumer cluster peer-remove|evacuate STREAM NAME PEER | cancel-move STREAM NAME\n"
          "  pub SUBJECT [BODY] [--count N] [--size B]   (JetStream publish, acknowledged)\n"
          "  sub SUBJECT [--count N]\n"
          "  server check stream --stream NAME --peer-expect N\n"
          "  server list [--expect N]\n"
          "  server evacuate NAME [--cancel]\n"
          "  server cluster step-down | peer-remove NAME\n"
          "  server report jetstream\n"
          "\n"
          "URLS: comma-separated nats:// URLs (default $NATS_URL, then nats://127.0.0.1:4222).\n",
          f);
}

/* Removes global option i (with its value if it takes one) from argv. */
static void drop(int *argc, char **argv, int i, int n)
{
    memmove(&argv[i], &argv[i + n], sizeof *argv * (size_t)(*argc - i - n + 1));
    *argc -= n;
}

int main(int argc, char **argv)
{
    const char *servers = getenv("NATS_URL"), *user = NULL, *pass = NULL, *timeout = NULL;
    cli c = {NULL, 0, 5000};
    for (int i = 1; i < argc;) {
        const char *o = argv[i];
        const char **slot = !strcmp(o, "--server") || !strcmp(o, "-s") ? &servers
                            : !strcmp(o, "--user")                     ? &user
                            : !strcmp(o, "--password")                 ? &pass
                            : !strcmp(o, "--timeout")                  ? &timeout
                                                                       : NULL;
        if (slot) {
            if (i + 1 >= argc) {
                fprintf(stderr, "jetraft: %s needs a value\n", o);
                return 2;
            }
            *slot = argv[i + 1];
            drop(&argc, argv, i, 2);
        } else if (!strcmp(o, "--json")) {
            c.json = 1;
            drop(&argc, argv, i, 1);
        } else if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            usage(stdout);
            return 0;
        } else {
            i++;
        }
    }
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (timeout) {
        args t = {2, (char *[]){"--timeout", (char *)timeout, NULL}};
        c.timeout_ms = arg_duration(&t, "timeout", 0) / 1000000;
        if (c.timeout_ms <= 0) {
            fprintf(stderr, "jetraft: --timeout must be positive\n");
            return 2;
        }
    }

    natsOptions *opts = NULL;
    natsOptions_Create(&opts);
    char *list = strdup(servers && *servers ? servers : "nats://127.0.0.1:4222");
    const char *urls[16];
    int nurls = 0;
    for (char *save = NULL, *u = strtok_r(list, ",", &save); u && nurls < 16;
         u = strtok_r(NULL, ",", &save))
        urls[nurls++] = u;
    natsOptions_SetServers(opts, urls, nurls);
    natsOptions_SetTimeout(opts, 5000);
    if (user) natsOptions_SetUserInfo(opts, user, pass ? pass : "");
    natsStatus s = natsConnection_Connect(&c.nc, opts);
    natsOptions_Destroy(opts);
    if (s != NATS_OK) {
        fprintf(stderr, "jetraft: cannot connect to %s: %s\n", servers ? servers : urls[0],
                nats_GetLastError(NULL));
        free(list);
        return 1;
    }

    const char *noun = argv[1], *verb = argc > 2 ? argv[2] : "";
    int rc;
    args a = {argc - 3 > 0 ? argc - 3 : 0, argv + 3};
    args a1 = {argc - 2 > 0 ? argc - 2 : 0, argv + 2}; /* nouns without verbs */
    if (!strcmp(noun, "stream") || !strcmp(noun, "str"))
        rc = cmd_stream(&c, verb, &a);
    else if (!strcmp(noun, "consumer") || !strcmp(noun, "con"))
        rc = cmd_consumer(&c, verb, &a);
    else if (!strcmp(noun, "pub"))
        rc = cmd_pub(&c, &a1);
    else if (!strcmp(noun, "sub"))
        rc = cmd_sub(&c, &a1);
    else if (!strcmp(noun, "server"))
        rc = cmd_server(&c, verb, &a);
    else {
        fprintf(stderr, "jetraft: unknown command '%s'\n", noun);
        usage(stderr);
        rc = 2;
    }
    natsConnection_Destroy(c.nc);
    /* waits for libnats's threads: a subscription's dispatcher may still be inside a handler
     * (pub's ack handler returns before libnats frees the reply it delivered), and the process
     * must not exit with that half done */
    nats_CloseAndWait(2000);
    free(list);
    return rc;
}
