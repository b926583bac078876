/* A library that leaks an internal symbol: exports.sh must refuse it. */
__attribute__((visibility("default"))) int jr__leaked(void);
__attribute__((visibility("default"))) int jr_public(void);

int jr__leaked(void)
{
    return 1;
}

int jr_public(void)
{
    return jr__leaked();
}
