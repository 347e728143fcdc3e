/* next_b - the definition trap.c's trap_next must find through RTLD_NEXT. */
__attribute__((visibility("default"))) int trap_next(void)
{
	return 7;
}
