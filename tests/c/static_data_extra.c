/* The second object file of static_data: its globals are as symmetric as the first one's. */
int g_extra_data[8] = {0, 1, 2, 7, 0, 0, 0, 0};
long g_extra_bss[8];

int extra_peek(int i) { return g_extra_data[i]; }
