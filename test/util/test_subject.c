/* The subject grammar (lib/util/subject.c): validation and its edges, both forms, matching. */
#include <check.h>
#include <string.h>

#include "util/subject.h"

#define M(f, s) jr__subject_match(f, strlen(f), s, strlen(s))
#define V(s, w) jr__subject_valid(s, strlen(s), w)

START_TEST(literal_and_wildcards)
{
    ck_assert(M("a.b.c", "a.b.c"));
    ck_assert(!M("a.b.c", "a.b"));
    ck_assert(!M("a.b", "a.b.c"));
    ck_assert(!M("a.b.c", "a.b.cd"));
    ck_assert(M("a.*.c", "a.b.c"));
    ck_assert(!M("a.*.c", "a.c"));
    ck_assert(!M("a.*.c", "a.b.b.c"));
    ck_assert(M("*", "a"));
    ck_assert(!M("*", "a.b"));
    ck_assert(M(">", "a"));
    ck_assert(M(">", "a.b.c"));
    ck_assert(M("a.>", "a.b"));
    ck_assert(M("a.>", "a.b.c"));
    ck_assert(!M("a.>", "a"));
    ck_assert(!M("a.>", "b.c"));
    ck_assert(M("*.>", "a.b"));
    ck_assert(!M("*.>", "a"));
    ck_assert(M("*.*", "a.b"));
    ck_assert(M("a*.b", "a*.b")); /* not a wildcard: a literal token */
    ck_assert(!M("a*.b", "ax.b"));
    ck_assert(!M("a.b", ""));
}
END_TEST

START_TEST(validity)
{
    ck_assert(V("orders.new", 0));
    ck_assert(V("a", 0));
    ck_assert(!V("", 0));
    ck_assert(!V(".a", 0));
    ck_assert(!V("a.", 0));
    ck_assert(!V("a..b", 0));
    ck_assert(!V("a b", 0));
    ck_assert(!V("a\tb", 0));
    ck_assert(!V("a.*", 0));
    ck_assert(V("a.*", 1));
    ck_assert(V("a.>", 1));
    ck_assert(V(">", 1));
    ck_assert(!V("a.>.b", 1));
    ck_assert(V("a*b.c", 0));
    ck_assert(jr__subject_literal("a.b", 3));
    ck_assert(!jr__subject_literal("a.*", 3));
    ck_assert(!jr__subject_literal(">", 1));
    ck_assert(jr__subject_literal("a>", 2));
}
END_TEST

/* The edges of the grammar, in both forms (length-delimited and NUL-terminated). */
START_TEST(grammar_edges)
{
    static const struct {
        const char *s;
        int kind;
        const char *why;
    } cases[] = {
        {"a", JR__SUBJECT_LITERAL, NULL},
        {"a*", JR__SUBJECT_LITERAL, NULL}, /* wildcards are whole tokens only */
        {"*a.b>", JR__SUBJECT_LITERAL, NULL},
        {">a", JR__SUBJECT_LITERAL, NULL},
        {"a.\x01.\x7f", JR__SUBJECT_LITERAL, NULL}, /* control bytes are not whitespace */
        {"$JS.API.>", JR__SUBJECT_PATTERN, NULL},
        {"*", JR__SUBJECT_PATTERN, NULL},
        {">", JR__SUBJECT_PATTERN, NULL},
        {"*.*.>", JR__SUBJECT_PATTERN, NULL},
        {"", JR__SUBJECT_INVALID, "empty subject"},
        {".", JR__SUBJECT_INVALID, "empty token"},
        {"a..b", JR__SUBJECT_INVALID, "empty token"},
        {"a.b.", JR__SUBJECT_INVALID, "empty token"},
        {" ", JR__SUBJECT_INVALID, "contains whitespace"},
        {"a.\tb", JR__SUBJECT_INVALID, "contains whitespace"},
        {"a.\n", JR__SUBJECT_INVALID, "contains whitespace"},
        {"a.\v", JR__SUBJECT_INVALID, "contains whitespace"},
        {"a.\f", JR__SUBJECT_INVALID, "contains whitespace"},
        {"a.\r", JR__SUBJECT_INVALID, "contains whitespace"},
        {">.a", JR__SUBJECT_INVALID, "'>' must be the last token"},
        {">.>", JR__SUBJECT_INVALID, "'>' must be the last token"},
        {"a..>", JR__SUBJECT_INVALID, "empty token"}, /* the first problem met */
        {"a b..c", JR__SUBJECT_INVALID, "contains whitespace"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *s = cases[i].s, *w1 = NULL, *w2 = NULL;
        ck_assert_msg(jr__subject_classify_n(s, strlen(s), &w1) == cases[i].kind, "case %zu", i);
        ck_assert_msg(jr__subject_classify(s, &w2) == cases[i].kind, "case %zu", i);
        if (cases[i].why) {
            ck_assert_str_eq(w1, cases[i].why);
            ck_assert_str_eq(w2, cases[i].why);
        }
        ck_assert_int_eq(V(s, 0), cases[i].kind == JR__SUBJECT_LITERAL);
        ck_assert_int_eq(V(s, 1), cases[i].kind != JR__SUBJECT_INVALID);
        ck_assert_int_eq(jr__subject_valid_literal(s), cases[i].kind == JR__SUBJECT_LITERAL);
        ck_assert_int_eq(jr__subject_valid_pattern(s), cases[i].kind != JR__SUBJECT_INVALID);
    }
    /* a NUL byte inside a length-delimited subject */
    const char *why = NULL;
    ck_assert_int_eq(jr__subject_classify_n("a\0b", 3, &why), JR__SUBJECT_INVALID);
    ck_assert_str_eq(why, "contains a NUL byte");
    ck_assert(!jr__subject_valid("a.\0", 3, 1));
    ck_assert_int_eq(jr__subject_classify(NULL, &why), JR__SUBJECT_INVALID);
    ck_assert_str_eq(why, "empty subject");
    ck_assert(!jr__subject_valid(NULL, 0, 1));
}
END_TEST

/* JR__SUBJECT_MAX bytes are accepted, one more is refused, in both forms; a longer subject is
 * refused for its length only once nothing earlier was wrong with it. */
START_TEST(length_limit)
{
    /* "a.a.a....a.aa": JR__SUBJECT_MAX bytes */
    static char s[JR__SUBJECT_MAX + 2];
    memset(s, 'a', JR__SUBJECT_MAX);
    for (size_t k = 1; k + 2 < JR__SUBJECT_MAX; k += 2) s[k] = '.';
    ck_assert_uint_eq(strlen(s), JR__SUBJECT_MAX);
    ck_assert_int_eq(jr__subject_classify(s, NULL), JR__SUBJECT_LITERAL);
    ck_assert_int_eq(jr__subject_classify_n(s, JR__SUBJECT_MAX, NULL), JR__SUBJECT_LITERAL);
    /* "...a.aa.>" of the same length */
    s[JR__SUBJECT_MAX - 3] = 'a';
    s[JR__SUBJECT_MAX - 2] = '.';
    s[JR__SUBJECT_MAX - 1] = '>';
    ck_assert_int_eq(jr__subject_classify(s, NULL), JR__SUBJECT_PATTERN);
    /* one byte more */
    s[JR__SUBJECT_MAX - 2] = s[JR__SUBJECT_MAX - 1] = s[JR__SUBJECT_MAX] = 'a';
    const char *why = NULL;
    ck_assert_int_eq(jr__subject_classify(s, &why), JR__SUBJECT_INVALID);
    ck_assert_str_eq(why, "longer than 4096 bytes");
    why = NULL;
    ck_assert_int_eq(jr__subject_classify_n(s, JR__SUBJECT_MAX + 1, &why), JR__SUBJECT_INVALID);
    ck_assert_str_eq(why, "longer than 4096 bytes");
    ck_assert(!V(s, 0));
    ck_assert(!V(s, 1));
    s[2] = ' ';
    ck_assert_int_eq(jr__subject_classify(s, &why), JR__SUBJECT_INVALID);
    ck_assert_str_eq(why, "contains whitespace");
}
END_TEST

/* Matching by tokens, as a reference: split both and compare token by token. */
static int ref_match(const char *f, const char *s)
{
    char fb[32], sb[32];
    strcpy(fb, f);
    strcpy(sb, s);
    char *fs, *ss;
    char *ft = strtok_r(fb, ".", &fs), *st = strtok_r(sb, ".", &ss);
    for (;;) {
        if (!ft || !st) return !ft && !st;
        if (strcmp(ft, ">") == 0) return 1;
        if (strcmp(ft, "*") != 0 && strcmp(ft, st) != 0) return 0;
        ft = strtok_r(NULL, ".", &fs);
        st = strtok_r(NULL, ".", &ss);
    }
}

/* Every string of up to 4 bytes over {a, b, '.', '*', '>', ' '}: the length-delimited and
 * NUL-terminated forms agree; valid patterns match valid literals exactly as the reference;
 * the NUL-terminated matcher agrees with the length-delimited one. */
START_TEST(forms_agree_exhaustively)
{
    static const char alpha[] = "ab.*> ";
    static char valid[1400][8];
    static int kinds[1400];
    size_t nv = 0;
    for (int len = 0; len <= 4; len++) {
        int total = 1;
        for (int k = 0; k < len; k++) total *= 6;
        for (int code = 0; code < total; code++) {
            char s[8] = "";
            for (int k = 0, c = code; k < len; k++, c /= 6) s[k] = alpha[c % 6];
            s[len] = 0;
            int kind = jr__subject_classify_n(s, (size_t)len, NULL);
            ck_assert_int_eq(jr__subject_classify(s, NULL), kind);
            ck_assert_int_eq(V(s, 1), kind != JR__SUBJECT_INVALID);
            if (kind != JR__SUBJECT_INVALID) {
                ck_assert_int_eq(jr__subject_literal(s, strlen(s)), kind == JR__SUBJECT_LITERAL);
                strcpy(valid[nv], s);
                kinds[nv++] = kind;
            }
        }
    }
    for (size_t i = 0; i < nv; i++)
        for (size_t j = 0; j < nv; j++) {
            if (kinds[j] != JR__SUBJECT_LITERAL) continue;
            int m = M(valid[i], valid[j]);
            ck_assert_msg(m == ref_match(valid[i], valid[j]), "%s ~ %s", valid[i], valid[j]);
            ck_assert_int_eq(jr__subject_matches(valid[i], valid[j]), m);
        }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("subject");
    TCase *tc = tcase_create("subject");
    tcase_add_test(tc, literal_and_wildcards);
    tcase_add_test(tc, validity);
    tcase_add_test(tc, grammar_edges);
    tcase_add_test(tc, length_limit);
    tcase_add_test(tc, forms_agree_exhaustively);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
