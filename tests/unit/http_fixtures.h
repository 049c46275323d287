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
	int kind;
	unsigned flags, noflags;
	unsigned req_len;
	const char *method;
	int minor;
};

static const struct hfx http_fx[] = {
	{ "POST no body", S("POST / HTTP/1.1\r\nHost: x\r\n\r\n"), XPS_REQ_SERVE, 0, XPS_HTTP_F_CLOSE, 28, "POST", 1 },
	{ "GET", S("GET /index.html?a=1&b=2 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n"), XPS_REQ_SERVE, 0, 0, ANY, "GET", 1 },
	{ "POST body", S("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"), XPS_REQ_SERVE, XPS_HTTP_F_BODY, 0, 53, "POST", 1 },
	{ "POST CL 0", S("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"), XPS_REQ_SERVE, 0, XPS_HTTP_F_BODY, 47, "POST", 1 },
	{ "leading CRLF skipped (405)", S("\r\n\r\n\nPOST / HTTP/1.1\r\nHost: x\r\n\r\n"), XPS_REQ_SERVE, XPS_HTTP_F_LEADING_CRLF, 0, 33, "POST", 1 },
	{ "LF only lines (405)", S("POST / HTTP/1.1\nHost: x\n\n"), XPS_REQ_SERVE, 0, 0, 25, "POST", 1 },
	{ "header case-insensitive", S("POST / HTTP/1.1\r\nhOsT: x\r\ncontent-LENGTH: 1\r\n\r\nz"), XPS_REQ_SERVE, XPS_HTTP_F_BODY, 0, 48, "POST", 1 },
	{ "unknown method with _ (405)", S("PO_ST / HTTP/1.1\r\nHost: x\r\n\r\n"), XPS_REQ_SERVE, 0, 0, 29, "PO_ST", 1 },
	{ "HTTP/1.0 keep-alive (405 keep-alive)", S("POST / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"), XPS_REQ_SERVE, 0, XPS_HTTP_F_CLOSE, ANY, "POST", 0 },
	{ "HTTP/1.0 (405 close)", S("POST / HTTP/1.0\r\n\r\n"), XPS_REQ_HARMLESS, XPS_HTTP_F_CLOSE, 0, 19, "POST", 0 },
	{ "Connection close (405 close)", S("POST / HTTP/1.1\r\nHost: x\r\nConnection: Close\r\n\r\n"), XPS_REQ_HARMLESS, XPS_HTTP_F_CLOSE, 0, ANY, "POST", 1 },
	{ "MSIE pads the page", S("POST / HTTP/1.1\r\nHost: x\r\nUser-Agent: Mozilla/4.0 (compatible; MSIE 6.0)\r\n\r\n"), XPS_REQ_HARMLESS, XPS_HTTP_F_PAD, 0, ANY, "POST", 1 },
	{ "Chrome pads the page", S("POST / HTTP/1.1\r\nHost: x\r\nUser-Agent: Mozilla/5.0 Chrome/120.0\r\n\r\n"), XPS_REQ_HARMLESS, XPS_HTTP_F_PAD, 0, ANY, "POST", 1 },
	{ "curl UA fine", S("POST / HTTP/1.1\r\nHost: x\r\nUser-Agent: curl/7.88.1\r\n\r\n"), XPS_REQ_SERVE, 0, XPS_HTTP_F_PAD, ANY, "POST", 1 },
	{ "Expect", S("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello"), XPS_REQ_HARMLESS, XPS_HTTP_F_EXPECT, 0, ANY, "POST", 1 },
	{ "chunked", S("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"), XPS_REQ_HARMLESS, XPS_HTTP_F_CHUNKED, 0, ANY, "POST", 1 },
	{ "no Host in 1.1 (400)", S("POST / HTTP/1.1\r\n\r\n"), XPS_REQ_HARMLESS, XPS_HTTP_F_ODD, 0, ANY, "POST", 1 },
	{ "two Content-Length (400)", S("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n"), XPS_REQ_HARMLESS, XPS_HTTP_F_ODD, 0, ANY, "POST", 1 },
	{ "bad Content-Length (400)", S("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n"), XPS_REQ_HARMLESS, XPS_HTTP_F_ODD, 0, ANY, "POST", 1 },
	{ "dot segment", S("POST /a/../b HTTP/1.1\r\nHost: x\r\n\r\n"), XPS_REQ_HARMLESS, XPS_HTTP_F_ODD, 0, ANY, "POST", 1 },
	{ "percent escape", S("POST /%41 HTTP/1.1\r\nHost: x\r\n\r\n"), XPS_REQ_HARMLESS, XPS_HTTP_F_ODD, 0, ANY, "POST", 1 },
	{ "two spaces (nginx 405, we pass)", S("POST  / HTTP/1.1\r\nHost: x\r\n\r\n"), XPS_REQ_HARMLESS, XPS_HTTP_F_ODD, 0, ANY, "POST", 1 },
	{ "HTTP/2.0 (505)", S("POST / HTTP/2.0\r\nHost: x\r\n\r\n"), XPS_REQ_HARMLESS, XPS_HTTP_F_ODD, 0, ANY, "POST", -1 },
	{ "HTTP/0.9 (400)", S("POST /\r\n\r\n"), XPS_REQ_HARMLESS, XPS_HTTP_F_ODD, 0, ANY, "POST", -1 },
	{ "header without colon (400)", S("POST / HTTP/1.1\r\nHost: x\r\nbogus\r\n\r\n"), XPS_REQ_HARMLESS, XPS_HTTP_F_ODD, 0, ANY, "POST", 1 },
	{ "NUL in header (400)", S("POST / HTTP/1.1\r\nHost: x\r\nA: b\0c\r\n\r\n"), XPS_REQ_HARMLESS, XPS_HTTP_F_ODD, 0, ANY, "POST", 1 },
	{ "lowercase method (400)", S("post / HTTP/1.1\r\nHost: x\r\n\r\n"), XPS_REQ_MALFORMED, 0, 0, ANY, "", -1 },
	{ "tab after method (400)", S("POST\t/ HTTP/1.1\r\nHost: x\r\n\r\n"), XPS_REQ_MALFORMED, 0, 0, ANY, "", -1 },
	{ "method split", S("PO"), XPS_REQ_INCOMPLETE, 0, 0, ANY, "", -1 },
	{ "headers not ended", S("POST / HTTP/1.1\r\nHost: x\r\n"), XPS_REQ_INCOMPLETE, 0, 0, ANY, "POST", -1 },
	{ "body not here", S("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"), XPS_REQ_INCOMPLETE, XPS_HTTP_F_BODY, 0, 58, "POST", 1 },
	{ "body too big", S("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"), XPS_REQ_INCOMPLETE, XPS_HTTP_F_BODY | XPS_F_TOO_BIG, 0, 100052, "POST", 1 },
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
