package config

import (
	"io"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Logger returns a zap logger writing to w at LOG_LEVEL in LOG_FORMAT:
// JSON lines for production, or plain console lines for people.
func (s Shared) Logger(w io.Writer) *zap.Logger {
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	var encoder zapcore.Encoder
	if s.LogFormat == FormatConsole {
		encoder = zapcore.NewConsoleEncoder(enc)
	} else {
		encoder = zapcore.NewJSONEncoder(enc)
	}
	return zap.New(zapcore.NewCore(encoder, zapcore.Lock(zapcore.AddSync(w)), s.LogLevel))
}

// LogStart logs each warning of a Load (a value raised to its minimum), then
// the resolved settings, secrets masked, once at start-up (docs/config.md).
func LogStart(log *zap.Logger, warnings []string, settings ...zap.Field) {
	for _, w := range warnings {
		log.Warn("setting raised to its minimum", zap.String("warning", w))
	}
	log.Info("starting", settings...)
}
