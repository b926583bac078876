/* the seam header: fine on its own */
#include "util/heap.h"
