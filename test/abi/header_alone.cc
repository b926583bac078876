// One part header of include/jetraft/, included on its own (JR_PART_HEADER), compiles as C++.
#include JR_PART_HEADER

int main()
{
    return 0;
}
