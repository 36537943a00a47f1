// Package logsafe is how the service prints a value that came from outside
// (Redis, GitHub, a request) where a person reads it in a terminal, such as
// `kubectl logs` or the poller's admin commands: printable ASCII as it is,
// anything else quoted with every other byte escaped, so that no value can
// move the cursor, retitle the terminal or read backwards. It imports nothing
// of the service, so that any package may use it.
package logsafe

import (
	"strconv"

	"go.uber.org/zap"
)

// Quote returns s unchanged when every byte of it is printable ASCII (space
// to tilde), else s quoted by strconv.QuoteToASCII: control characters (C0,
// DEL and C1), bidirectional and zero-width characters, invalid UTF-8 and
// every other non-ASCII character show as Go escapes and do nothing.
func Quote(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return strconv.QuoteToASCII(s)
		}
	}
	return s
}

// String is zap.String of Quote(s): the field of a value that came from
// outside.
func String(key, s string) zap.Field { return zap.String(key, Quote(s)) }

// NamedError is the field of err's message under key, quoted as String
// quotes a value, for an error that may embed what came from outside; a nil
// err adds no field, as with zap.NamedError.
func NamedError(key string, err error) zap.Field {
	if err == nil {
		return zap.Skip()
	}
	return String(key, err.Error())
}
