/*
 * interest.h — a table of subscription interest: (subject, queue) -> count.
 *
 * The routing layer keeps one for this server's own subscriptions (how many local
 * subscriptions share each subject and queue, so that peers hear only of changes that matter)
 * and one per peer (what that peer announced). Matching a published subject costs a bucket walk
 * for the literal subjects, one for the wildcard subjects that start with the same literal token
 * (a client's request inbox `_INBOX.<id>.*` is one of these), and a scan of the subjects that
 * start with a wildcard (rare). An entry whose count reaches 0 is removed; the table never holds
 * a zero count. Not thread-safe.
 */
#ifndef SRV_INTEREST_H
#define SRV_INTEREST_H

#include <stddef.h>
#include <stdint.h>

typedef struct interest interest;

interest *interest_new(void);
void interest_free(interest *t);
/* Removes every entry. */
void interest_clear(interest *t);
/* Entries held, and the bytes they take (entries and names). */
size_t interest_size(const interest *t);
size_t interest_bytes(const interest *t);

/* Adds delta (+1 or -1) to the count of (subject, queue) (queue NULL or "": none) and gives
 * the new count in *count. 0, or -1 when out of memory (nothing changed) or when a count would
 * go below 0 (an entry that is not there: nothing changed). */
int interest_add(interest *t, const char *subject, const char *queue, int delta, uint32_t *count);
/* Sets the count of (subject, queue); 0 removes the entry. 0, or -1 when out of memory. */
int interest_set(interest *t, const char *subject, const char *queue, uint32_t count);

/* Called per entry; queue is NULL for plain interest. A non-zero return stops the walk and is
 * returned by it. The table must not be changed from the callback. */
typedef int (*interest_cb)(void *arg, const char *subject, const char *queue, uint32_t count);
/* Every entry whose subject matches the literal subject `subject`. */
int interest_match(const interest *t, const char *subject, interest_cb cb, void *arg);
/* Every entry. */
int interest_each(const interest *t, interest_cb cb, void *arg);

#endif
