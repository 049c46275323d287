/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * HTTP requests and what xps_http_parse() must report; checked against
 * nginx 1.22.1 (`return 405;` for POST): the expected nginx answer is in
 * the comment where it matters.
 */
#include "fixture.h"

struct hfx {
	const char *desc;
	const char *req;
	size_t req_n;
	int kind;		/* enum xps_req_kind */
	unsigned flags;		/* flags that must be set */
	unsigned noflags;	/* flags that must be clear */
	unsigned req_len;	/* ANY: do not check */
	const char *method;	/* method as parsed ("" when none was) */
	int minor;		/* HTTP/1.minor; -1: do not check */
};

static const struct hfx http_fx[] = {
	{ .desc = "POST no body", REQ("POST / HTTP/1.1\r\nHost: x\r\n\r\n"),
	  .kind = XPS_REQ_SERVE, .noflags = XPS_HTTP_F_CLOSE, .req_len = 28, .method = "POST",
	  .minor = 1 },
	{ .desc = "GET", REQ("GET /index.html?a=1&b=2 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n"),
	  .kind = XPS_REQ_SERVE, .req_len = ANY, .method = "GET", .minor = 1 },
	{ .desc = "POST body", REQ("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"),
	  .kind = XPS_REQ_SERVE, .flags = XPS_HTTP_F_BODY, .req_len = 53, .method = "POST",
	  .minor = 1 },
	{ .desc = "POST CL 0", REQ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"),
	  .kind = XPS_REQ_SERVE, .noflags = XPS_HTTP_F_BODY, .req_len = 47, .method = "POST",
	  .minor = 1 },
	{ .desc = "leading CRLF skipped (405)", REQ("\r\n\r\n\nPOST / HTTP/1.1\r\nHost: x\r\n\r\n"),
	  .kind = XPS_REQ_SERVE, .flags = XPS_HTTP_F_LEADING_CRLF, .req_len = 33, .method = "POST",
	  .minor = 1 },
	{ .desc = "LF only lines (405)", REQ("POST / HTTP/1.1\nHost: x\n\n"),
	  .kind = XPS_REQ_SERVE, .req_len = 25, .method = "POST", .minor = 1 },
	{ .desc = "header case-insensitive", REQ("POST / HTTP/1.1\r\nhOsT: x\r\ncontent-LENGTH: 1\r\n\r\nz"),
	  .kind = XPS_REQ_SERVE, .flags = XPS_HTTP_F_BODY, .req_len = 48, .method = "POST",
	  .minor = 1 },
	{ .desc = "unknown method with _ (405)", REQ("PO_ST / HTTP/1.1\r\nHost: x\r\n\r\n"),
	  .kind = XPS_REQ_SERVE, .req_len = 29, .method = "PO_ST", .minor = 1 },
	{ .desc = "HTTP/1.0 keep-alive (405 keep-alive)", REQ("POST / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
	  .kind = XPS_REQ_SERVE, .noflags = XPS_HTTP_F_CLOSE, .req_len = ANY, .method = "POST",
	  .minor = 0 },
	{ .desc = "HTTP/1.0 (405 close)", REQ("POST / HTTP/1.0\r\n\r\n"),
	  .kind = XPS_REQ_HARMLESS, .flags = XPS_HTTP_F_CLOSE, .req_len = 19, .method = "POST",
	  .minor = 0 },
	{ .desc = "Connection close (405 close)", REQ("POST / HTTP/1.1\r\nHost: x\r\nConnection: Close\r\n\r\n"),
	  .kind = XPS_REQ_HARMLESS, .flags = XPS_HTTP_F_CLOSE, .req_len = ANY, .method = "POST",
	  .minor = 1 },
	{ .desc = "MSIE pads the page", REQ("POST / HTTP/1.1\r\nHost: x\r\nUser-Agent: Mozilla/4.0 (compatible; MSIE 6.0)\r\n\r\n"),
	  .kind = XPS_REQ_HARMLESS, .flags = XPS_HTTP_F_PAD, .req_len = ANY, .method = "POST",
	  .minor = 1 },
	{ .desc = "Chrome pads the page", REQ("POST / HTTP/1.1\r\nHost: x\r\nUser-Agent: Mozilla/5.0 Chrome/120.0\r\n\r\n"),
	  .kind = XPS_REQ_HARMLESS, .flags = XPS_HTTP_F_PAD, .req_len = ANY, .method = "POST",
	  .minor = 1 },
	{ .desc = "curl UA fine", REQ("POST / HTTP/1.1\r\nHost: x\r\nUser-Agent: curl/7.88.1\r\n\r\n"),
	  .kind = XPS_REQ_SERVE, .noflags = XPS_HTTP_F_PAD, .req_len = ANY, .method = "POST",
	  .minor = 1 },
	{ .desc = "Expect", REQ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello"),
	  .kind = XPS_REQ_HARMLESS, .flags = XPS_HTTP_F_EXPECT, .req_len = ANY, .method = "POST",
	  .minor = 1 },
	{ .desc = "chunked", REQ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
	  .kind = XPS_REQ_HARMLESS, .flags = XPS_HTTP_F_CHUNKED, .req_len = ANY, .method = "POST",
	  .minor = 1 },
	{ .desc = "no Host in 1.1 (400)", REQ("POST / HTTP/1.1\r\n\r\n"),
	  .kind = XPS_REQ_HARMLESS, .flags = XPS_HTTP_F_ODD, .req_len = ANY, .method = "POST",
	  .minor = 1 },
	{ .desc = "two Content-Length (400)", REQ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n"),
	  .kind = XPS_REQ_HARMLESS, .flags = XPS_HTTP_F_ODD, .req_len = ANY, .method = "POST",
	  .minor = 1 },
	{ .desc = "bad Content-Length (400)", REQ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n"),
	  .kind = XPS_REQ_HARMLESS, .flags = XPS_HTTP_F_ODD, .req_len = ANY, .method = "POST",
	  .minor = 1 },
	{ .desc = "dot segment", REQ("POST /a/../b HTTP/1.1\r\nHost: x\r\n\r\n"),
	  .kind = XPS_REQ_HARMLESS, .flags = XPS_HTTP_F_ODD, .req_len = ANY, .method = "POST",
	  .minor = 1 },
	{ .desc = "percent escape", REQ("POST /%41 HTTP/1.1\r\nHost: x\r\n\r\n"),
	  .kind = XPS_REQ_HARMLESS, .flags = XPS_HTTP_F_ODD, .req_len = ANY, .method = "POST",
	  .minor = 1 },
	{ .desc = "two spaces (nginx 405, we pass)", REQ("POST  / HTTP/1.1\r\nHost: x\r\n\r\n"),
	  .kind = XPS_REQ_HARMLESS, .flags = XPS_HTTP_F_ODD, .req_len = ANY, .method = "POST",
	  .minor = 1 },
	{ .desc = "HTTP/2.0 (505)", REQ("POST / HTTP/2.0\r\nHost: x\r\n\r\n"),
	  .kind = XPS_REQ_HARMLESS, .flags = XPS_HTTP_F_ODD, .req_len = ANY, .method = "POST",
	  .minor = -1 },
	{ .desc = "HTTP/0.9 (400)", REQ("POST /\r\n\r\n"),
	  .kind = XPS_REQ_HARMLESS, .flags = XPS_HTTP_F_ODD, .req_len = ANY, .method = "POST",
	  .minor = -1 },
	{ .desc = "header without colon (400)", REQ("POST / HTTP/1.1\r\nHost: x\r\nbogus\r\n\r\n"),
	  .kind = XPS_REQ_HARMLESS, .flags = XPS_HTTP_F_ODD, .req_len = ANY, .method = "POST",
	  .minor = 1 },
	{ .desc = "NUL in header (400)", REQ("POST / HTTP/1.1\r\nHost: x\r\nA: b\0c\r\n\r\n"),
	  .kind = XPS_REQ_HARMLESS, .flags = XPS_HTTP_F_ODD, .req_len = ANY, .method = "POST",
	  .minor = 1 },
	{ .desc = "lowercase method (400)", REQ("post / HTTP/1.1\r\nHost: x\r\n\r\n"),
	  .kind = XPS_REQ_MALFORMED, .req_len = ANY, .method = "", .minor = -1 },
	{ .desc = "tab after method (400)", REQ("POST\t/ HTTP/1.1\r\nHost: x\r\n\r\n"),
	  .kind = XPS_REQ_MALFORMED, .req_len = ANY, .method = "", .minor = -1 },
	{ .desc = "method split", REQ("PO"),
	  .kind = XPS_REQ_INCOMPLETE, .req_len = ANY, .method = "", .minor = -1 },
	{ .desc = "headers not ended", REQ("POST / HTTP/1.1\r\nHost: x\r\n"),
	  .kind = XPS_REQ_INCOMPLETE, .req_len = ANY, .method = "POST", .minor = -1 },
	{ .desc = "body not here", REQ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"),
	  .kind = XPS_REQ_INCOMPLETE, .flags = XPS_HTTP_F_BODY, .req_len = 58, .method = "POST",
	  .minor = 1 },
	{ .desc = "body too big", REQ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"),
	  .kind = XPS_REQ_INCOMPLETE, .flags = XPS_HTTP_F_BODY | XPS_F_TOO_BIG, .req_len = 100052,
	  .method = "POST", .minor = 1 },
};

/* What nginx 1.22.1 sent for POST with `return 405;` (Date replaced). */
static const char http_405_ref[] =
	"HTTP/1.1 405 Not Allowed\r\nServer: nginx/1.22.1\r\n"
	"Date: Sat, 21 Nov 2026 19:40:29 GMT\r\nContent-Type: text/html\r\n"
	"Content-Length: 157\r\nConnection: keep-alive\r\n\r\n"
	"<html>\r\n<head><title>405 Not Allowed</title></head>\r\n<body>\r\n"
	"<center><h1>405 Not Allowed</h1></center>\r\n"
	"<hr><center>nginx/1.22.1</center>\r\n</body>\r\n</html>\r\n";
/* limit_except with server_tokens off: 403, "nginx" without version. */
static const char http_403_ref[] =
	"HTTP/1.1 403 Forbidden\r\nServer: nginx\r\n"
	"Date: Sat, 21 Nov 2026 19:40:30 GMT\r\nContent-Type: text/html\r\n"
	"Content-Length: 146\r\nConnection: keep-alive\r\n\r\n"
	"<html>\r\n<head><title>403 Forbidden</title></head>\r\n<body>\r\n"
	"<center><h1>403 Forbidden</h1></center>\r\n"
	"<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";
