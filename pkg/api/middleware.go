package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"
)

// observe returns a middleware that turns a panic into a logged 500 and, when
// log is at debug level, writes one access-log line per request. At any other
// level it costs no allocation.
func observe(log *zap.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) (err error) {
			debug := log.Core().Enabled(zap.DebugLevel)
			var start time.Time
			if debug {
				start = time.Now()
			}
			defer func() {
				if v := recover(); v != nil {
					// net/http's own signal to abort a response must reach it.
					if v == http.ErrAbortHandler {
						panic(v)
					}
					log.Error("panic",
						zap.String("method", c.Request().Method),
						zap.String("path", c.Request().URL.Path),
						zap.String("err", fmt.Sprint(v)),
						zap.Stack("stack"))
					err = echo.ErrInternalServerError
				}
				if debug {
					status := c.Response().Status
					// An error is answered after this middleware returns.
					if he := (*echo.HTTPError)(nil); errors.As(err, &he) {
						status = he.Code
					}
					log.Debug("request",
						zap.String("method", c.Request().Method),
						zap.String("path", c.Request().URL.Path),
						zap.Int("status", status),
						zap.Duration("took", time.Since(start)))
				}
			}()
			return next(c)
		}
	}
}

// handleError answers a request whose handler returned err. echo's own
// errors (404, 405, the 500 of a recovered panic) are answered as echo does;
// any other error is logged first, since nothing else reports it.
func (s *Server) handleError(err error, c echo.Context) {
	if he := (*echo.HTTPError)(nil); !errors.As(err, &he) {
		s.log.Error("request failed",
			zap.String("method", c.Request().Method),
			zap.String("path", c.Request().URL.Path),
			zap.Error(err))
	}
	s.echo.DefaultHTTPErrorHandler(err, c)
}
