/* copyhow.h - the shape of a host copy call: synchronous or not, and which
 * default stream its stream 0 means (the _ptds/_ptsz forms). */
#ifndef PC_COPYHOW_H
#define PC_COPYHOW_H

enum pc_copy_how { PC_COPY_SYNC, PC_COPY_SYNC_PTDS, PC_COPY_ASYNC, PC_COPY_ASYNC_PTSZ };

#endif
