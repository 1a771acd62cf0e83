// Package fakellm is a scripted model server that speaks the real wire
// formats of OpenAI Chat Completions and Anthropic Messages, streaming and
// not, exactly as the official Go SDKs expect them.
//
// Tests and `talaria demo` point a real provider adapter at a Server, script
// the replies (text, tool calls, reasoning, truncation, HTTP errors with
// headers, in-stream errors, dropped connections, latency) and then inspect
// what the adapter sent: every request is recorded both raw and as a
// normalized view, and strict validation rejects transcripts the real APIs
// would reject (orphan tool results, unanswered tool calls, bad alternation),
// answering a real-shaped 400 and recording a violation.
//
// Routes: POST /v1/chat/completions (OpenAI) and POST /v1/messages
// (Anthropic). Everything else is a 404 in the OpenAI error shape.
package fakellm
