module github.com/storytold/craft-releases

go 1.26.0

require (
	github.com/caarlos0/env/v11 v11.4.2
	github.com/google/go-github/v66 v66.0.0
	github.com/labstack/echo/v4 v4.16.0
	github.com/redis/rueidis v1.0.79
	go.uber.org/zap v1.28.0
	golang.org/x/sync v0.25.0
)

require (
	github.com/google/go-querystring v1.1.0 // indirect
	github.com/labstack/gommon v0.5.0 // indirect
	github.com/mattn/go-colorable v0.1.15 // indirect
	github.com/mattn/go-isatty v0.0.22 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/fasttemplate v1.2.2 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	golang.org/x/crypto v0.54.0 // indirect
	golang.org/x/net v0.57.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)
