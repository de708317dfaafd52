// inferscope-cli: placeholder entry point until the engine lands (see the engine issue).
#include <cstdio>
int main() { std::fputs("inferscope-cli: not built yet\n", stderr); return 1; }
