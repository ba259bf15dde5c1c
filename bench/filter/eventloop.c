int bench_eventloop_main(int argc, char **argv) { (void)argc; (void)argv; return 0; }
