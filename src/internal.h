/* SPDX-License-Identifier: MIT */
/*
 * Every internal header of the library, for the files that use most of
 * them (prefix shmlog__): the segment's bytes (seg_format.h), the mapped
 * segment (segment.h), clocks, the ring and its lanes, filters, the
 * deferred codec, test points, SHMLOG_DEBUG and the handle, each in a
 * header of its own; and the record protocol readers follow.
 */
#ifndef SHMLOG_INTERNAL_H
#define SHMLOG_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shmlog.h"

#include "clock.h"
#include "debug.h"
#include "deferred.h"
#include "filter.h"
#include "guard.h"
#include "handle.h"
#include "lane.h"
#include "ring.h"
#include "seg_format.h"
#include "segment.h"
#include "testpoint.h"

/* ---- the record protocol for readers: reader_proto.h ---- */
#include "reader_proto.h"

#endif
