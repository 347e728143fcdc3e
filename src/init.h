/* init.h - the life cycle (init.c): start-up, fork and exit of every module. */
#ifndef PC_INIT_H
#define PC_INIT_H

/* Start-up, once; called by the first interposed call or the constructor. */
void pc_init(void);

#endif
