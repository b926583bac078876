// The public headers compile as C++ and declare C linkage.
#include <jetraft.h>
#include <jetraft/sim.h>

int main()
{
    jr_stream_config cfg;
    jr_stream_config_init(&cfg);
    return jr_strerror(JR_EBUSY)[0] == 'c' ? 0 : 1;
}
