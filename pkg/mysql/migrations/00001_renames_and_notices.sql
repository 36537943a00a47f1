-- The renames and notices launchers are told about (docs/wire.md). Every row has an
-- optional window: it is live from starts_at (NULL: from its creation) until
-- ends_at (NULL: until it is ended). Times are UTC. The limits match
-- pkg/mysql's (validate.go); the CHECKs keep hand-written rows honest too.

-- +goose Up
CREATE TABLE craft_app_renames (
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  old_name    VARCHAR(100)  NOT NULL,
  new_name    VARCHAR(100)  NOT NULL,
  description VARCHAR(1000) NOT NULL DEFAULT '',
  renamed_at  DATETIME(3)   NULL,
  starts_at   DATETIME(3)   NULL,
  ends_at     DATETIME(3)   NULL,
  created_at  DATETIME(3)   NOT NULL,
  CONSTRAINT craft_app_renames_names CHECK (old_name <> '' AND new_name <> ''),
  CONSTRAINT craft_app_renames_window CHECK (starts_at IS NULL OR ends_at IS NULL OR starts_at <= ends_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE craft_repo_renames (
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  old_name    VARCHAR(140) NOT NULL,
  new_name    VARCHAR(140) NOT NULL,
  renamed_at  DATETIME(3)  NULL,
  starts_at   DATETIME(3)  NULL,
  ends_at     DATETIME(3)  NULL,
  created_at  DATETIME(3)  NOT NULL,
  CONSTRAINT craft_repo_renames_names CHECK (old_name LIKE '_%/_%' AND new_name LIKE '_%/_%'),
  CONSTRAINT craft_repo_renames_window CHECK (starts_at IS NULL OR ends_at IS NULL OR starts_at <= ends_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE craft_announcements (
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  title       VARCHAR(200)  NOT NULL,
  body        VARCHAR(4000) NOT NULL DEFAULT '',
  starts_at   DATETIME(3)   NULL,
  ends_at     DATETIME(3)   NULL,
  created_at  DATETIME(3)   NOT NULL,
  CONSTRAINT craft_announcements_title CHECK (title <> ''),
  CONSTRAINT craft_announcements_window CHECK (starts_at IS NULL OR ends_at IS NULL OR starts_at <= ends_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE craft_alerts (
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  title       VARCHAR(200)  NOT NULL,
  body        VARCHAR(4000) NOT NULL DEFAULT '',
  web_link    VARCHAR(2000) NULL,
  starts_at   DATETIME(3)   NULL,
  ends_at     DATETIME(3)   NULL,
  created_at  DATETIME(3)   NOT NULL,
  CONSTRAINT craft_alerts_title CHECK (title <> ''),
  CONSTRAINT craft_alerts_link CHECK (web_link IS NULL OR web_link LIKE 'https://_%'),
  CONSTRAINT craft_alerts_window CHECK (starts_at IS NULL OR ends_at IS NULL OR starts_at <= ends_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE craft_alerts;
DROP TABLE craft_announcements;
DROP TABLE craft_repo_renames;
DROP TABLE craft_app_renames;
