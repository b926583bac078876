/* includes only the seam */
#include "node/services.h"
