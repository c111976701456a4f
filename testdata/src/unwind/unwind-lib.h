/* The shared library of unwind-demo.c: work in another module, and a callback back out. */
void lib_work(int n);
void lib_callback(void (*fn)(int), int n);
void compare_back(int n);
