/* error — the one table that maps JR_E* codes to names and text, and the version strings. */
#include "jetraft.h"

#define JR__STR2(x) #x
#define JR__STR(x) JR__STR2(x)

const char *jr_version(void)
{
    return JR__STR(JR_VERSION_MAJOR) "." JR__STR(JR_VERSION_MINOR) "." JR__STR(JR_VERSION_PATCH);
}

int jr_version_number(void)
{
    return JR_VERSION_NUMBER;
}

const char *jr_strerror(int err)
{
    if (err == 0) return "success";
    switch (err) {
#define JR__ERR_TEXT(name, value, text)                                                            \
    case value:                                                                                    \
        return text;
        JR_ERRNO_MAP(JR__ERR_TEXT)
#undef JR__ERR_TEXT
    default:
        return "unknown error";
    }
}

const char *jr_err_name(int err)
{
    if (err == 0) return "OK";
    switch (err) {
#define JR__ERR_NAME(name, value, text)                                                            \
    case value:                                                                                    \
        return #name;
        JR_ERRNO_MAP(JR__ERR_NAME)
#undef JR__ERR_NAME
    default:
        return "UNKNOWN";
    }
}
