//! Queries on `products` and `product_project_links` (the product bus).

use super::Db;
use super::driver::{Row, args};
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::ProductId;
use crate::records::{Product, Project, ProjectId};

fn product(row: &Row<'_>) -> Result<Product> {
    Ok(Product {
        id: row.get(0)?,
        product_uid: row.get(1)?,
        name: row.get(2)?,
        created_at: row.get(3)?,
    })
}

impl Db<'_> {
    /// The product whose uid or name is exactly `key` (case-sensitive); a uid match wins.
    pub fn product_by_key(&self, key: &str) -> Result<Option<Product>> {
        self.query_opt(
            "SELECT id, product_uid, name, created_at FROM products
             WHERE product_uid = ?1 OR name = ?1 ORDER BY (product_uid = ?1) DESC, id LIMIT 1",
            args![key],
            product,
        )
    }

    /// Inserts a product and returns it.
    pub fn insert_product(&self, uid: &str, name: &str, now: Timestamp) -> Result<Product> {
        self.query_row(
            "INSERT INTO products (product_uid, name, created_at) VALUES (?1, ?2, ?3)
             RETURNING id, product_uid, name, created_at",
            args![uid, name, now],
            product,
        )
    }

    /// Links a project to a product unless it is linked already.
    pub fn link_product_project(
        &self,
        product_id: ProductId,
        project_id: ProjectId,
        now: Timestamp,
    ) -> Result<()> {
        self.execute(
            "INSERT INTO product_project_links (product_id, project_id, created_at)
             VALUES (?1, ?2, ?3) ON CONFLICT (product_id, project_id) DO NOTHING",
            args![product_id, project_id, now],
        )
        .map(drop)
    }

    /// The projects linked to a product, in project id order.
    pub fn product_projects(&self, product_id: ProductId) -> Result<Vec<Project>> {
        self.query_vec(
            "SELECT p.id, p.slug, p.human_key, p.created_at, p.archived_at
             FROM product_project_links l JOIN projects p ON p.id = l.project_id
             WHERE l.product_id = ?1 ORDER BY p.id",
            args![product_id],
            |row| {
                Ok(Project {
                    id: row.get(0)?,
                    slug: row.get(1)?,
                    human_key: row.get(2)?,
                    created_at: row.get(3)?,
                    archived_at: row.get(4)?,
                })
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::model::time::Timestamp;
    use crate::store::Store;

    #[tokio::test]
    async fn products_are_found_by_uid_or_exact_name_and_links_are_idempotent() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(&dir.path().join("db.sqlite3"), 1, None).expect("open");
        let (names, linked) = store
            .write(|db| {
                let now = Timestamp::now();
                let product = db.insert_product("abcdef12", "Widget", now)?;
                let alpha = db.insert_project_if_absent("alpha", "/alpha", now)?;
                let beta = db.insert_project_if_absent("beta", "/beta", now)?;
                for project in [&beta, &alpha, &beta] {
                    db.link_product_project(product.id, project.id, now)?;
                }
                let found = [
                    db.product_by_key("abcdef12")?,
                    db.product_by_key("Widget")?,
                    db.product_by_key("widget")?,
                ];
                let names: Vec<Option<String>> =
                    found.into_iter().map(|p| p.map(|p| p.name)).collect();
                let linked: Vec<String> =
                    db.product_projects(product.id)?.into_iter().map(|p| p.slug).collect();
                Ok((names, linked))
            })
            .await
            .expect("write");
        assert_eq!(names, [Some("Widget".to_string()), Some("Widget".to_string()), None]);
        assert_eq!(linked, ["alpha", "beta"], "one link per project, in project order");
    }
}
