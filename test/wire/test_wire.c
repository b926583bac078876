/* Unit tests of lib/wire: the peer frame codec (round trips, malformed input, coalesced
 * heartbeats, requests and responses). */
#include "wire_test.h"

int main(void)
{
    SRunner *sr = srunner_create(tw_roundtrip_suite());
    srunner_add_suite(sr, tw_malformed_suite());
    srunner_add_suite(sr, tw_hb_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
