package anthropic

// maxBreakpoints is the API's limit on cache_control markers per request.
const maxBreakpoints = 4

// placeCacheBreakpoints marks where the provider may cache the prompt prefix.
//
// Placement, in this order, at most maxBreakpoints in all:
//  1. the last tool definition: caches every tool (tools render first);
//  2. the last system block: caches tools + system;
//  3. the last content block of the newest user turn and of the one before
//     it. The older mark is what the previous call wrote, so this call reads
//     it back; the newer one is written for the next call.
//
// It depends only on the request's shape, so the same request always gets
// the same marks and the prefix bytes stay stable from call to call.
func placeCacheBreakpoints(w *wireRequest, ttl string) {
	used := 0
	if n := len(w.Tools); n > 0 {
		w.Tools[n-1].markCache(ttl)
		used++
	}
	if n := len(w.System); n > 0 {
		w.System[n-1].markCache(ttl)
		used++
	}
	for i, marked := len(w.Messages)-1, 0; i >= 0 && marked < 2 && used < maxBreakpoints; i-- {
		m := w.Messages[i]
		if m.Role != "user" || len(m.Content) == 0 {
			continue
		}
		m.Content[len(m.Content)-1].markCache(ttl)
		marked++
		used++
	}
}
