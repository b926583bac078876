/* Subjects and patterns: what is valid, what matches, and which patterns overlap. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "util/subject.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

START_TEST(valid_literals_and_patterns)
{
    static const char *literal[] = {
        "orders",       "orders.eu.new", "a.b.c.d.e.f",
        "$JS.API.INFO", "a*b.c>d", /* wildcards only count as whole tokens */
        "ünïcode.ok",   "x-y_z.123"};
    for (size_t i = 0; i < N(literal); i++) {
        ck_assert_msg(jr__subject_classify(literal[i], NULL) == JR__SUBJECT_LITERAL, "%s",
                      literal[i]);
        ck_assert(jr__subject_valid_literal(literal[i]));
        ck_assert(jr__subject_valid_pattern(literal[i]));
    }
    static const char *pattern[] = {"*",      ">",           "orders.>", "orders.*",
                                    "*.eu.*", "tenants.*.>", "a.*.c.>"};
    for (size_t i = 0; i < N(pattern); i++) {
        ck_assert_msg(jr__subject_classify(pattern[i], NULL) == JR__SUBJECT_PATTERN, "%s",
                      pattern[i]);
        ck_assert(!jr__subject_valid_literal(pattern[i]));
        ck_assert(jr__subject_valid_pattern(pattern[i]));
    }
}
END_TEST

START_TEST(invalid_subjects_say_why)
{
    static const struct {
        const char *s;
        const char *why;
    } bad[] = {
        {"", "empty subject"},
        {".", "empty token"},
        {"a.", "empty token"},
        {".a", "empty token"},
        {"a..b", "empty token"},
        {"a b", "contains whitespace"},
        {"a.\tb", "contains whitespace"},
        {"a\n", "contains whitespace"},
        {"a.b\r", "contains whitespace"},
        {"\f", "contains whitespace"},
        {"a.\v", "contains whitespace"},
        {">.a", "'>' must be the last token"},
        {"a.>.b", "'>' must be the last token"},
        {"a.>.>", "'>' must be the last token"},
    };
    for (size_t i = 0; i < N(bad); i++) {
        const char *why = NULL;
        ck_assert_msg(jr__subject_classify(bad[i].s, &why) == JR__SUBJECT_INVALID, "case %zu", i);
        ck_assert_str_eq(why, bad[i].why);
        ck_assert(!jr__subject_valid_pattern(bad[i].s));
        ck_assert(!jr__subject_valid_literal(bad[i].s));
    }
    ck_assert_int_eq(jr__subject_classify(NULL, NULL), JR__SUBJECT_INVALID);
}
END_TEST

START_TEST(length_limit)
{
    char *s = malloc(JR__SUBJECT_MAX + 2);
    memset(s, 'a', JR__SUBJECT_MAX);
    s[JR__SUBJECT_MAX] = '\0';
    ck_assert(jr__subject_valid_literal(s)); /* exactly the limit */
    s[JR__SUBJECT_MAX] = 'a';
    s[JR__SUBJECT_MAX + 1] = '\0';
    const char *why;
    ck_assert_int_eq(jr__subject_classify(s, &why), JR__SUBJECT_INVALID);
    ck_assert_str_eq(why, "longer than 4096 bytes");
    free(s);
}
END_TEST

START_TEST(matching)
{
    static const struct {
        const char *pattern, *subject;
        int match;
    } cases[] = {
        {"orders", "orders", 1},
        {"orders", "orders.new", 0},
        {"orders.new", "orders", 0},
        {"orders.*", "orders.new", 1},
        {"orders.*", "orders", 0},
        {"orders.*", "orders.eu.new", 0},
        {"orders.>", "orders.new", 1},
        {"orders.>", "orders.eu.new", 1},
        {"orders.>", "orders", 0},
        {">", "anything.at.all", 1},
        {">", "x", 1},
        {"*", "x", 1},
        {"*", "x.y", 0},
        {"*.eu.*", "orders.eu.new", 1},
        {"*.eu.*", "orders.us.new", 0},
        {"a.*.c.>", "a.b.c.d", 1},
        {"a.*.c.>", "a.b.c", 0},
        {"a.*.c.>", "a.b.x.d", 0},
        {"ab", "a", 0},
        {"a", "ab", 0},
        {"a*b", "a*b", 1},
        {"a*b", "axb", 0},
    };
    for (size_t i = 0; i < N(cases); i++)
        ck_assert_msg(jr__subject_matches(cases[i].pattern, cases[i].subject) == cases[i].match,
                      "%s ~ %s", cases[i].pattern, cases[i].subject);
}
END_TEST

/* The overlap table: symmetric, and true exactly when some literal subject matches both. */
static const struct {
    const char *a, *b;
    int overlap;
} overlaps[] = {
    {"a", "a", 1},
    {"a", "b", 0},
    {"a", "a.b", 0},
    {"a.*", "a.b", 1},
    {"a.*", "a", 0},
    {"a.*", "a.b.c", 0},
    {"a.*", "*.b", 1},
    {"a.*", "b.*", 0},
    {"a.>", "a", 0},
    {"a.>", "a.b", 1},
    {"a.>", "a.b.c", 1},
    {"a.>", "a.*", 1},
    {"a.>", "*.*.*", 1},
    {"a.>", "b.>", 0},
    {">", "a", 1},
    {">", "a.b.c", 1},
    {"*", "a.b", 0},
    {"*", ">", 1},
    {"*.>", "a", 0},
    {"*.>", "a.b", 1},
    {"orders.*.eu", "orders.new.*", 1},
    {"orders.*.eu", "orders.new.us", 0},
    {"orders.*.eu", "orders.>", 1},
    {"tenants.1.>", "tenants.2.>", 0},
    {"tenants.*.events", "tenants.42.>", 1},
    {"a.b.c", "a.b.c.>", 0},
    {"a.b", "a.b.*", 0},
};

START_TEST(overlap_table)
{
    for (size_t i = 0; i < N(overlaps); i++) {
        ck_assert_msg(jr__subject_overlap(overlaps[i].a, overlaps[i].b) == overlaps[i].overlap,
                      "%s vs %s", overlaps[i].a, overlaps[i].b);
        ck_assert_msg(jr__subject_overlap(overlaps[i].b, overlaps[i].a) == overlaps[i].overlap,
                      "%s vs %s (swapped)", overlaps[i].b, overlaps[i].a);
    }
}
END_TEST

/* Cross-check overlap against brute force: enumerate every literal subject of up to 4 tokens
 * over a small alphabet and see whether some subject matches both patterns. */
START_TEST(overlap_agrees_with_brute_force)
{
    static const char *toks[] = {"a", "b", "*", ">"};
    static const char *lits[] = {"a", "b", "c"};
    char pats[400][16];
    size_t np = 0;
    for (int len = 1; len <= 3; len++) {
        int total = 1;
        for (int i = 0; i < len; i++) total *= 4;
        for (int code = 0; code < total; code++) {
            char buf[16] = "";
            int c = code;
            for (int i = 0; i < len; i++) {
                if (i) strcat(buf, ".");
                strcat(buf, toks[c % 4]);
                c /= 4;
            }
            if (jr__subject_valid_pattern(buf)) strcpy(pats[np++], buf);
        }
    }
    char subs[200][16];
    size_t ns = 0;
    for (int len = 1; len <= 4; len++) {
        int total = 1;
        for (int i = 0; i < len; i++) total *= 3;
        for (int code = 0; code < total; code++) {
            char buf[16] = "";
            int c = code;
            for (int i = 0; i < len; i++) {
                if (i) strcat(buf, ".");
                strcat(buf, lits[c % 3]);
                c /= 3;
            }
            strcpy(subs[ns++], buf);
        }
    }
    for (size_t i = 0; i < np; i++) {
        for (size_t j = 0; j < np; j++) {
            int brute = 0;
            for (size_t k = 0; k < ns && !brute; k++)
                brute =
                    jr__subject_matches(pats[i], subs[k]) && jr__subject_matches(pats[j], subs[k]);
            ck_assert_msg(jr__subject_overlap(pats[i], pats[j]) == brute, "%s vs %s", pats[i],
                          pats[j]);
            /* subset: every matching subject of i matches j (on this finite universe, with
             * patterns short enough that it decides the general case) */
            int sub = 1;
            for (size_t k = 0; k < ns && sub; k++)
                if (jr__subject_matches(pats[i], subs[k]) && !jr__subject_matches(pats[j], subs[k]))
                    sub = 0;
            ck_assert_msg(jr__subject_subset(pats[i], pats[j]) == sub, "%s <= %s", pats[i],
                          pats[j]);
        }
    }
}
END_TEST

START_TEST(token_count)
{
    ck_assert_uint_eq(jr__subject_ntokens("a"), 1);
    ck_assert_uint_eq(jr__subject_ntokens("a.b.>"), 3);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("subject");
    TCase *tc = tcase_create("subject");
    tcase_add_test(tc, valid_literals_and_patterns);
    tcase_add_test(tc, invalid_subjects_say_why);
    tcase_add_test(tc, length_limit);
    tcase_add_test(tc, matching);
    tcase_add_test(tc, overlap_table);
    tcase_add_test(tc, overlap_agrees_with_brute_force);
    tcase_add_test(tc, token_count);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
