// SPDX-License-Identifier: MIT
//
// spdlog in async mode, the best-known in-process logger: the caller
// formats the payload ("tag: message") and queues it; one background
// thread per process formats the line (time, pid, tid, level, logger name)
// and writes it to a file through a basic_file_sink. The queue is spdlog's
// default size (8192) with the default overflow policy (block the caller).
// Each writer process has its own thread pool: they do not survive fork().
// close() destroys the pool, which drains the queue, so that the harness's
// CPU accounting includes the background thread's work.
#include <cerrno>
#include <memory>
#include <unistd.h>
#include <string>

#include <spdlog/async.h>
#include <spdlog/async_logger.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include "log.h"

namespace {

struct sp_writer {
	std::shared_ptr<spdlog::details::thread_pool> pool;
	std::shared_ptr<spdlog::async_logger> log;
};

spdlog::level::level_enum sp_level(int prio)
{
	switch (prio) {
	case 2: return spdlog::level::trace;
	case 3: return spdlog::level::debug;
	case 4: return spdlog::level::info;
	case 5: return spdlog::level::warn;
	case 6: return spdlog::level::err;
	default: return spdlog::level::critical;
	}
}

int sp_setup(struct lb_ctx *c)
{
	if (lb_make_dir(c) < 0)
		return -1;
	snprintf(c->arg, sizeof(c->arg), "%s/spdlog.log", c->dir);
	snprintf(c->note, sizeof(c->note), "spdlog %d.%d.%d, queue 8192, block",
		 SPDLOG_VER_MAJOR, SPDLOG_VER_MINOR, SPDLOG_VER_PATCH);
	return 0;
}

void sp_teardown(struct lb_ctx *c)
{
	lb_remove_dir(c);
}

void sp_reset(struct lb_ctx *c)
{
	// The file may not exist before the first run.
	if (truncate(c->arg, 0) < 0 && errno != ENOENT)
		fprintf(stderr, "warning: truncate %s failed\n", c->arg);
}

void *sp_open(const char *arg, char *err, size_t errlen)
{
	try {
		auto w = new sp_writer;
		w->pool = std::make_shared<spdlog::details::thread_pool>(8192, 1);
		auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(arg);
		w->log = std::make_shared<spdlog::async_logger>(
			"bench", sink, w->pool, spdlog::async_overflow_policy::block);
		// threadtime-like: date, time, pid, tid, level, then "tag: msg".
		w->log->set_pattern("%m-%d %H:%M:%S.%f %P %t %L %v");
		w->log->set_level(spdlog::level::trace);
		return w;
	} catch (const std::exception &e) {
		snprintf(err, errlen, "spdlog: %s", e.what());
		return nullptr;
	}
}

long sp_write(void *p, const struct lb_msg *m)
{
	auto w = static_cast<sp_writer *>(p);
	try {
		w->log->log(sp_level(m->prio), "{}: {}",
			    spdlog::string_view_t(m->tag, m->tag_len),
			    spdlog::string_view_t(m->msg, m->len));
	} catch (...) {
		return -EIO;
	}
	return 0;
}

void sp_close(void *p)
{
	auto w = static_cast<sp_writer *>(p);
	w->log->flush();
	w->log.reset();
	w->pool.reset(); // joins the worker once the queue is empty
	delete w;
}

} // namespace

extern "C" const struct lb_contender lb_spdlog = {
	"spdlog-async",
	"spdlog async logger (1 background thread) to a file",
	0,
	0,
	sp_setup,
	sp_teardown,
	sp_reset,
	sp_open,
	sp_write,
	sp_close,
	nullptr,
};
