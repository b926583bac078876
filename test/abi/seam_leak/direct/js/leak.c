/* reaches past the seam into the core's structures */
#include "node/services.h"
#include "node/node.h"
