// Package transcript turns durable session rows into the message sequence a
// provider accepts: Project leaves out what is never sent and replays the
// exact bytes recorded for a row, Repair fixes whatever a crash, an interrupt
// or a provider quirk left behind, and CleanText/CleanRequest keep text that
// leaves the loop valid UTF-8.
//
// Nothing here modifies its input: repaired and cleaned messages are copies,
// and unchanged messages share their content with the input.
package transcript
