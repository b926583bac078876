/*
 * jsjson_impl.h — what jsjson.c (streams) and jsjson_consumer.c (consumers) share: setting
 * JetStream's error in the parsers' out parameters, and reading optional fields of a config
 * object. A field that is absent or null leaves its output unchanged; a field of the wrong type
 * or value sets 400 / 10025 "invalid JSON: <field> <what>" and returns -1.
 */
#ifndef SRV_JSJSON_IMPL_H
#define SRV_JSJSON_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Sets the error (code c, err_code e, description text). */
void jsj_set_err(int *code, int *err_code, char *desc, size_t desclen, int c, int e,
                 const char *text);
/* For a status that means the cluster cannot answer now (no leader or quorum, a timeout, a lost
 * leadership, a closed node, a damaged replica): sets 503 / 10008 "JetStream system
 * temporarily unavailable" and returns 1; else 0. */
int jsj_unavailable(int status, int *code, int *err_code, char *desc, size_t desclen);
/* Sets 400 / 10025 "invalid JSON: <field> <what>"; returns -1. */
int jsj_bad(int *code, int *err_code, char *desc, size_t desclen, const char *field,
            const char *what);
/* An integer field. */
int jsj_int(json_t *j, const char *f, int64_t *out, int *code, int *err_code, char *desc,
            size_t dl);
/* A boolean field (*out 0 or 1). */
int jsj_bool(json_t *j, const char *f, int *out, int *code, int *err_code, char *desc, size_t dl);
/* An enum given as a string among the n names (index = value; NULL names never match). */
int jsj_enum(json_t *j, const char *f, const char *const *names, int n, int *out, int *code,
             int *err_code, char *desc, size_t dl);

#endif
