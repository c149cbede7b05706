//! Reading many rows fast: the database concatenates each page of rows into
//! one text (fields joined by U+001F, rows by U+001E) and the daemon splits
//! it. sqlx's per-row cost (a message per row, `Any` value conversion) would
//! otherwise dominate big sacct queries; the engines do this in C.

use drover_conf::dbdconf::StorageKind;
use sqlx::{AssertSqlSafe, Row};

use crate::store::Store;

pub const FS: char = '\u{1f}';
pub const RS: char = '\u{1e}';
/// Rows per page: one text of up to ~100 MB, read in one statement (each
/// further page re-scans the rows before its OFFSET). MariaDB caps a result
/// at max_allowed_packet (16 MB by default): smaller pages there.
pub const PAGE: usize = 1_000_000;
pub const PAGE_MYSQL: usize = 100_000;

pub fn page_size(kind: StorageKind) -> usize {
    if kind == StorageKind::Mysql {
        PAGE_MYSQL
    } else {
        PAGE
    }
}

/// Text columns never contain the separators (they are replaced on insert).
pub fn clean(s: &str) -> String {
    if s.contains([FS, RS]) {
        s.replace([FS, RS], "?")
    } else {
        s.to_string()
    }
}

/// The statement reading one page: `cols` are expressions over `from`
/// (which includes joins and WHERE), ordered by `order`.
pub fn page_sql(
    kind: StorageKind,
    cols: &[String],
    from: &str,
    order: &str,
    offset: usize,
) -> String {
    let row = format!("concat_ws('{FS}', {})", cols.join(", "));
    // The page comes in `order`; the aggregate keeps it in practice, and the
    // caller sorts again anyway (an ORDER BY inside the aggregate would cost
    // a second sort).
    let agg = match kind {
        StorageKind::Sqlite => format!("group_concat(x, '{RS}')"),
        StorageKind::Postgres => format!("string_agg(x, '{RS}')"),
        StorageKind::Mysql => format!("GROUP_CONCAT(x SEPARATOR '{RS}')"),
    };
    format!(
        "SELECT {agg} FROM (SELECT {row} AS x FROM {from} ORDER BY {order} \
         LIMIT {} OFFSET {offset}) t",
        page_size(kind)
    )
}

/// All rows of a query, page by page: each page is one text of rows
/// separated by [`RS`], fields by [`FS`] (see [`rows`]). `bind` adds the
/// WHERE arguments to each page's statement.
pub async fn fetch<F>(
    store: &Store,
    cols: &[String],
    from: &str,
    order: &str,
    bind: F,
) -> Result<Vec<String>, sqlx::Error>
where
    F: Fn(
        sqlx::query::Query<'static, sqlx::Any, sqlx::any::AnyArguments>,
    ) -> sqlx::query::Query<'static, sqlx::Any, sqlx::any::AnyArguments>,
{
    let mut conn = store.pool.acquire().await?;
    if store.kind == StorageKind::Mysql {
        sqlx::query("SET SESSION group_concat_max_len = 1073741824")
            .execute(&mut *conn)
            .await?;
    }
    let mut pages = Vec::new();
    let mut offset = 0;
    loop {
        let sql = store.q(&page_sql(store.kind, cols, from, order, offset));
        let row = bind(sqlx::query(AssertSqlSafe(sql)))
            .fetch_one(&mut *conn)
            .await?;
        let text: Option<String> = row.try_get(0)?;
        let Some(text) = text else { break };
        let n = text.split(RS).count();
        pages.push(text);
        if n < page_size(store.kind) {
            break;
        }
        offset += page_size(store.kind);
    }
    Ok(pages)
}

/// The rows of fetched pages, each an iterator over its fields.
pub fn rows(pages: &[String]) -> impl Iterator<Item = std::str::Split<'_, char>> {
    pages.iter().flat_map(|p| p.split(RS)).map(|r| r.split(FS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_per_backend() {
        let cols = vec!["j.job_id".to_string(), "j.state".to_string()];
        let s = page_sql(StorageKind::Postgres, &cols, "jobs j", "j.job_id", 0);
        assert!(s.contains("string_agg(x, '\u{1e}')"));
        assert!(s.contains("concat_ws('\u{1f}', j.job_id, j.state)"));
        let m = page_sql(StorageKind::Mysql, &cols, "jobs j", "j.job_id", PAGE_MYSQL);
        assert!(m.contains("SEPARATOR '\u{1e}'"));
        assert!(m.contains(&format!("LIMIT {PAGE_MYSQL} OFFSET {PAGE_MYSQL}")));
        assert_eq!(clean("a\u{1f}b"), "a?b");
    }
}
