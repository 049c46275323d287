-- wrk: POST_PCT percent of the requests are POSTs with a 256-byte body
-- (the paper's blocked request), the rest GETs.
local pct = tonumber(os.getenv("POST_PCT") or "100")
local body = string.rep("x", 256)
request = function()
	if math.random(100) <= pct then
		return wrk.format("POST", "/", {["Content-Type"] = "text/plain"}, body)
	end
	return wrk.format("GET", "/")
end
