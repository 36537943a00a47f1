package mysql

import (
	"context"
	"fmt"
)

// StatementsPerConnection is the most server-side prepared statements one
// connection of the pool can hold at once. With interpolateParams the
// driver prepares nothing; only when it declines to interpolate (a query
// over max_allowed_packet) does database/sql prepare the statement, run it
// and close it, one query at a time per connection. MaxLifetime recycles
// connections, which frees anything a cancelled query left behind.
const StatementsPerConnection = 1

// Budget is the server's cap on prepared statements against what a fleet
// of pollers could hold. The worst case is
//
//	Fleet = replicas × MaxConns × StatementsPerConnection
//
// with the defaults 3 × 4 × 1 = 12 against MariaDB's and MySQL's default cap
// of 16,382, and 0 in steady state.
type Budget struct {
	Max   int64 // @@max_prepared_stmt_count: the server's cap, every client included
	Held  int64 // Prepared_stmt_count: what the server's clients hold now
	Fleet int64 // the fleet's worst case
}

// Tight reports whether the fleet could approach the cap: its worst case
// alone is over a tenth of it, or with what the server holds already it is
// over nine tenths.
func (b Budget) Tight() bool {
	return b.Fleet*10 > b.Max || (b.Held+b.Fleet)*10 > b.Max*9
}

// Budget reads the server's cap and count of prepared statements and works
// out the worst case of replicas pollers with this pool's settings. Neither
// read needs a privilege.
func (d *DB) Budget(ctx context.Context, replicas int) (Budget, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	b := Budget{Fleet: int64(replicas) * int64(d.opts.MaxConns) * StatementsPerConnection}
	if err := d.db.QueryRowContext(ctx, "SELECT @@max_prepared_stmt_count").Scan(&b.Max); err != nil {
		return Budget{}, fmt.Errorf("read max_prepared_stmt_count: %w", err)
	}
	var name string
	if err := d.db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'").Scan(&name, &b.Held); err != nil {
		return Budget{}, fmt.Errorf("read Prepared_stmt_count: %w", err)
	}
	return b, nil
}
