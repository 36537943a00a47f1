package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/logsafe"
	"github.com/storytold/craft-releases/pkg/routes"
)

// epoch is what observe times requests from: time.Since of a time with a
// monotonic reading reads the clock once, where time.Now reads it twice.
var epoch = time.Now()

// observe returns the middleware of the route registered as path. It answers
// a GET or HEAD with a body 400 (refuseBody), turns a
// panic into a logged 500 and answers a handler's error itself, so that the
// status code is final when it tells the Observer, if any, about the request.
// When the log is at debug level it also writes one access-log line per
// request. Otherwise, and as long as the Observer does not, it costs no
// allocation.
func (s *Server) observe(path string) echo.MiddlewareFunc {
	var record func(code int, took time.Duration)
	if s.obs != nil {
		record = s.obs.Route(path)
		s.observed[path] = record
	}
	log := s.log
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) (err error) {
			debug := log.Core().Enabled(zap.DebugLevel)
			var start time.Duration
			if debug || record != nil {
				start = time.Since(epoch)
			}
			defer func() {
				if v := recover(); v != nil {
					// net/http's own signal to abort a response must reach it.
					if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
						panic(v)
					}
					log.Error("panic",
						zap.String("method", c.Request().Method),
						logsafe.String("path", c.Request().URL.Path),
						logsafe.String("err", fmt.Sprint(v)),
						zap.Stack("stack"))
					err = echo.ErrInternalServerError
				}
				if err != nil {
					s.handleError(err, c)
					err = nil
				}
				if record == nil && !debug {
					return
				}
				took := time.Since(epoch) - start
				if record != nil {
					record(c.Response().Status, took)
				}
				if debug {
					log.Debug("request",
						zap.String("method", c.Request().Method),
						logsafe.String("path", c.Request().URL.Path),
						zap.Int("status", c.Response().Status),
						zap.Duration("took", took))
				}
			}()
			if err := refuseBody(c); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// refuseBody returns a 400 error for a GET or HEAD request that has a body
// (a Transfer-Encoding or a non-zero Content-Length), and sets Connection:
// close on the answer: such a message has no defined meaning (RFC 9110
// §9.3.1), and where its body ends is how requests get smuggled past a
// proxy (RFC 9112 §6.1), so the connection is not reused.
func refuseBody(c echo.Context) error {
	r := c.Request()
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || (r.ContentLength == 0 && len(r.TransferEncoding) == 0) {
		return nil
	}
	c.Response().Header().Set(hdrConnection, "close")
	return echo.NewHTTPError(http.StatusBadRequest, "a GET or HEAD request must not have a body")
}

// unrouted is echo's error handler, which only the requests that no route
// took reach: every route's middleware answers its own errors. They are 404
// (no route has the path) and 405 (a route has the path, not the method),
// told to the Observer under daemon.UnmatchedRoute and the route's path. Their time
// is that of writing the answer, since routing them costs next to nothing
// and no middleware ran before. A GET or HEAD with a body is answered 400
// here too.
func (s *Server) unrouted(err error, c echo.Context) {
	if bad := refuseBody(c); bad != nil {
		err = bad
	}
	if s.obs == nil {
		s.handleError(err, c)
		return
	}
	start := time.Now()
	s.handleError(err, c)
	record, ok := s.observed[c.Path()]
	if !ok {
		record = s.unmatched
	}
	record(c.Response().Status, time.Since(start))
}

// handleError answers a request whose handler returned err. echo's own
// errors (404, 405, the 500 of a recovered panic) are answered as echo does;
// any other error is logged first, since nothing else reports it. Every
// such answer is no-store: a cache that kept the 404 of a path that a
// rollout is adding would serve it after the route exists.
func (s *Server) handleError(err error, c echo.Context) {
	c.Response().Header()[hdrCacheControl] = noStore
	if he := (*echo.HTTPError)(nil); !errors.As(err, &he) {
		s.log.Error("request failed",
			zap.String("method", c.Request().Method),
			logsafe.String("path", c.Request().URL.Path),
			logsafe.NamedError("err", err))
	}
	// docs/wire.md: Vary on every answer of the endpoint and of an app's part of
	// it, a 405 included.
	if c.Request().URL.Path == routes.ReleaseInfoPath || c.Path() == routes.ReleaseInfoAppPath {
		c.Response().Header().Set(echo.HeaderVary, echo.HeaderAcceptEncoding)
	}
	s.echo.DefaultHTTPErrorHandler(err, c)
}
