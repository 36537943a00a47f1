package mysql

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"

	"github.com/storytold/craft-releases/pkg/secret"
)

// DSN returns the data source name Open takes for the poller's settings:
// dsn (MYSQL_DSN) as it is, or url (MYSQL_URL,
// mysql://user:password@host[:port]/database[?params], the port 3306 by
// default, the parameters the driver's own) converted; "" when both are
// empty. It refuses both set, a DSN or URL the driver does not parse, and one
// the pool could not use (a collation that interpolation cannot escape). Its
// error names the variable and never holds the password.
func DSN(dsn, url string) (string, error) {
	switch {
	case dsn != "" && url != "":
		return "", errors.New("MYSQL_DSN: set, and so is MYSQL_URL: set only one")
	case dsn != "":
		if msg := dsnProblem(dsn); msg != "" {
			return "", errors.New("MYSQL_DSN: " + msg)
		}
		return dsn, nil
	case url != "":
		converted, msg := urlToDSN(url)
		if msg != "" {
			return "", errors.New("MYSQL_URL: " + msg)
		}
		return converted, nil
	}
	return "", nil
}

// dsnProblem says what is wrong with a MYSQL_DSN, or "" when the pool can
// use it. The driver's messages do not quote the DSN, but a malformed one can
// put part of the password where they quote the network or the database
// name, so whatever could be the password, and each piece of it between the
// characters the driver splits at, is masked.
func dsnProblem(dsn string) string {
	cfg, err := mysqldriver.ParseDSN(dsn)
	if err != nil {
		return "does not parse as user:password@tcp(host:port)/database: " + secret.Scrub(err.Error(), passwordPieces(dsn)...)
	}
	if _, err := connector(cfg); err != nil {
		return err.Error()
	}
	return ""
}

// passwordPieces returns whatever lies in dsn between the first ':' and the
// last '@', where a DSN keeps its password, then its pieces of three or more
// bytes between the characters the driver splits a DSN at; none when there
// is nothing there.
func passwordPieces(dsn string) []string {
	at := strings.LastIndex(dsn, "@")
	colon := strings.Index(dsn, ":")
	if at < 0 || colon < 0 || colon+1 >= at {
		return nil
	}
	pw := dsn[colon+1 : at]
	pieces := []string{pw}
	for _, p := range strings.FieldsFunc(pw, func(r rune) bool { return strings.ContainsRune(":@/?()", r) }) {
		if len(p) >= 3 {
			pieces = append(pieces, p)
		}
	}
	return pieces
}

// urlToDSN converts a MYSQL_URL into the driver's DSN, or says what is wrong
// without holding the password.
func urlToDSN(raw string) (dsn, problem string) {
	const want = " (want mysql://user:password@host:3306/database, special characters of the password percent-encoded)"
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", "not a URL" + want
	case u.Scheme != "mysql":
		return "", fmt.Sprintf("scheme %q is not mysql", u.Scheme) + want
	case u.Hostname() == "":
		return "", "has no host" + want
	case u.Fragment != "":
		return "", "has a fragment" + want
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return "", "names no database, or more than one" + want
	}
	cfg := mysqldriver.NewConfig()
	cfg.Net, cfg.Addr, cfg.DBName = "tcp", u.Host, db
	if u.Port() == "" {
		cfg.Addr = net.JoinHostPort(u.Hostname(), "3306")
	}
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	if strings.ContainsAny(u.RawQuery, "/@") {
		// Only a password with unescaped special characters puts these
		// here; the driver would quote pieces of it.
		return "", "parameters hold '/' or '@'" + want
	}
	if u.RawQuery != "" {
		// The parameters are checked alone, so that the driver's message
		// cannot quote anything else of the URL.
		if _, err := mysqldriver.ParseDSN("/?" + u.RawQuery); err != nil {
			return "", "parameters: " + err.Error()
		}
	}
	dsn = cfg.FormatDSN()
	if u.RawQuery != "" {
		dsn += "?" + u.RawQuery
	}
	parsed, err := mysqldriver.ParseDSN(dsn)
	if err != nil {
		return "", "does not make a DSN the driver takes" + want
	}
	if _, err := connector(parsed); err != nil {
		return "", err.Error()
	}
	return dsn, ""
}

// connector applies the pool's policy to cfg, whatever its DSN said, and
// returns the driver's connector: arguments interpolated client-side
// (interpolateParams=true), so no statement is ever prepared on the server,
// and DATETIME columns parsed into UTC times. It fails for a cfg the policy
// cannot serve, such as a collation that interpolation cannot escape safely.
func connector(cfg *mysqldriver.Config) (driver.Connector, error) {
	cfg.InterpolateParams = true
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	return mysqldriver.NewConnector(cfg)
}
