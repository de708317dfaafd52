#include "chat_store.h"
// Implementation in progress (see the desktop-app issue).
