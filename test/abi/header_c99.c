/* The public headers compile as strict C99 (checked by building this file with -std=c99). */
#include <jetraft.h>
#include <jetraft/sim.h>

int main(void)
{
    jr_node_config cfg;
    jr_node_config_init(&cfg);
    return jr_version_number() == JR_VERSION_NUMBER ? 0 : 1;
}
