/* One part header of include/jetraft/, included on its own (JR_PART_HEADER), compiles: it
 * includes everything it needs. Built once per header as C99 and, from header_alone.cc, as C++. */
#include JR_PART_HEADER

int main(void)
{
    return 0;
}
