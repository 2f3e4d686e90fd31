//! An object store whose every request runs in a tracing span naming the object
//! (`storage{object=s3://bucket/run/_checkpoints/x.ckpt}`), so that the lines object_store logs
//! while it retries a request (a timeout, a refused connection, a 503) say which object they are
//! about; and the bound on those retries ([`retry_config`]).

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
    RetryConfig, UploadPart,
};
use tracing::{Instrument, Span};

/// The environment variable that bounds how long one storage request is retried, in seconds.
pub const TIMEOUT_ENV: &str = "EPIMINE_STORAGE_TIMEOUT";

/// How long one request is retried by default (object_store's own default): a store that does
/// not answer for this long fails the command, naming the object.
pub const DEFAULT_TIMEOUT_SECS: f64 = 180.0;

/// object_store's retries of one request (a timeout, a refused connection, a 5xx), bounded in
/// time by `EPIMINE_STORAGE_TIMEOUT` (seconds; default [`DEFAULT_TIMEOUT_SECS`]).
pub fn retry_config() -> std::result::Result<RetryConfig, String> {
    let secs = match std::env::var(TIMEOUT_ENV) {
        Err(_) => DEFAULT_TIMEOUT_SECS,
        Ok(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .ok_or_else(|| format!("{TIMEOUT_ENV}={v}: expected a number of seconds"))?,
    };
    Ok(RetryConfig {
        retry_timeout: Duration::from_secs_f64(secs),
        ..RetryConfig::default()
    })
}

/// A store whose requests run in a span naming their object (`root`/path).
#[derive(Debug)]
pub(super) struct NamedStore {
    inner: Arc<dyn ObjectStore>,
    /// `s3://bucket`.
    root: String,
}

impl NamedStore {
    pub(super) fn new(inner: Arc<dyn ObjectStore>, root: &str) -> Self {
        Self {
            inner,
            root: root.trim_end_matches('/').to_string(),
        }
    }

    fn span(&self, path: &Path) -> Span {
        tracing::info_span!("storage", object = %format!("{}/{path}", self.root))
    }
}

impl std::fmt::Display for NamedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.inner)
    }
}

/// A stream polled inside `span`.
fn in_span<S>(span: Span, stream: S) -> BoxStream<'static, S::Item>
where
    S: Stream + Send + 'static,
{
    let mut stream = Box::pin(stream);
    futures::stream::poll_fn(move |cx| {
        let _entered = span.enter();
        stream.as_mut().poll_next(cx)
    })
    .boxed()
}

#[async_trait]
impl ObjectStore for NamedStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let span = self.span(location);
        self.inner
            .put_opts(location, payload, opts)
            .instrument(span)
            .await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let span = self.span(location);
        let inner = self
            .inner
            .put_multipart_opts(location, opts)
            .instrument(span.clone())
            .await?;
        Ok(Box::new(NamedUpload { inner, span }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let span = self.span(location);
        let mut result = self
            .inner
            .get_opts(location, options)
            .instrument(span.clone())
            .await?;
        result.payload = match result.payload {
            GetResultPayload::Stream(stream) => GetResultPayload::Stream(in_span(span, stream)),
            other => other,
        };
        Ok(result)
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let span = self.span(location);
        self.inner
            .get_ranges(location, ranges)
            .instrument(span)
            .await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let span = tracing::info_span!("storage", object = %self.root);
        in_span(span, self.inner.delete_stream(locations))
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let span = self.span(prefix.unwrap_or(&Path::default()));
        in_span(span, self.inner.list(prefix))
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        let span = self.span(prefix.unwrap_or(&Path::default()));
        in_span(span, self.inner.list_with_offset(prefix, offset))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let span = self.span(prefix.unwrap_or(&Path::default()));
        self.inner
            .list_with_delimiter(prefix)
            .instrument(span)
            .await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        let span = self.span(to);
        self.inner
            .copy_opts(from, to, options)
            .instrument(span)
            .await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        let span = self.span(to);
        self.inner
            .rename_opts(from, to, options)
            .instrument(span)
            .await
    }
}

/// A multipart upload whose part uploads (run in tasks of their own by object_store's
/// `BufWriter`) stay in the span of their object.
#[derive(Debug)]
struct NamedUpload {
    inner: Box<dyn MultipartUpload>,
    span: Span,
}

#[async_trait]
impl MultipartUpload for NamedUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        Box::pin(self.inner.put_part(data).instrument(self.span.clone()))
    }

    async fn complete(&mut self) -> Result<PutResult> {
        let span = self.span.clone();
        self.inner.complete().instrument(span).await
    }

    async fn abort(&mut self) -> Result<()> {
        let span = self.span.clone();
        self.inner.abort().instrument(span).await
    }
}
