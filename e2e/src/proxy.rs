//! A man in the middle for one controller replica's API traffic (local cluster only). It forwards
//! every request to the API server until [`LeaseProxy::cut`]; from then on it refuses the
//! replica's writes of Leases (503, as an overloaded server would) and holds back what the
//! replica's watches of Leases receive by a set delay, while every other request still flows: a
//! leader that cannot renew and sees its Lease late, as a partial partition makes one.
//!
//! It speaks HTTP/1.1 as kube's client does: one request at a time on a connection, each
//! request's body sized by `Content-Length`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use kube::config::Kubeconfig;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Mutex, mpsc};
use tokio::time::Instant;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::work_dir;

/// The proxy; it stops when dropped.
pub struct LeaseProxy {
    port: u16,
    ca_pem: String,
    cut: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for LeaseProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Where requests go, and how to reach it.
#[derive(Clone)]
struct Upstream {
    address: String,
    name: ServerName<'static>,
    tls: TlsConnector,
}

impl LeaseProxy {
    /// A proxy in front of the API server `kubeconfig` names; once cut, Lease watch events
    /// arrive `delay` late.
    ///
    /// # Errors
    /// The kubeconfig cannot be read, or the proxy cannot listen.
    pub async fn start(kubeconfig: &Path, delay: Duration) -> Result<Self> {
        let upstream = upstream(kubeconfig).await?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;
        let key = KeyPair::generate()?;
        let cert = CertificateParams::new(vec!["127.0.0.1".to_owned()])?.signed_by(&key, &ca)?;
        let server = ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::try_from(key.serialize_der()).map_err(anyhow::Error::msg)?,
            )?;
        let acceptor = TlsAcceptor::from(Arc::new(server));
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let cut = Arc::new(AtomicBool::new(false));
        let cutting = cut.clone();
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, upstream, cut) =
                    (acceptor.clone(), upstream.clone(), cutting.clone());
                tokio::spawn(async move {
                    let _ = relay(tcp, acceptor, upstream, cut, delay).await;
                });
            }
        });
        Ok(Self {
            port,
            ca_pem: ca.pem(),
            cut,
            task,
        })
    }

    /// A copy of `kubeconfig` whose clusters are this proxy.
    ///
    /// # Errors
    /// The kubeconfig cannot be read or written.
    pub fn kubeconfig(&self, kubeconfig: &Path) -> Result<PathBuf> {
        use base64::Engine;
        let mut config = Kubeconfig::read_from(kubeconfig)?;
        for cluster in &mut config.clusters {
            if let Some(cluster) = cluster.cluster.as_mut() {
                cluster.server = Some(format!("https://127.0.0.1:{}", self.port));
                cluster.certificate_authority = None;
                cluster.certificate_authority_data =
                    Some(base64::engine::general_purpose::STANDARD.encode(&self.ca_pem));
                cluster.tls_server_name = None;
            }
        }
        let stem = kubeconfig
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "kubeconfig".into());
        let path = work_dir().join(format!("{stem}-proxied-{}.kubeconfig", self.port));
        std::fs::write(&path, serde_saphyr::to_string(&config)?)?;
        Ok(path)
    }

    /// From now on: Lease writes are refused, Lease watch events held back.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }
}

async fn upstream(kubeconfig: &Path) -> Result<Upstream> {
    let file = Kubeconfig::read_from(kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(file, &Default::default()).await?;
    let host = config
        .cluster_url
        .host()
        .context("no host in the server URL")?;
    let port = config.cluster_url.port_u16().unwrap_or(443);
    let mut roots = RootCertStore::empty();
    for der in config.root_cert.unwrap_or_default() {
        roots.add(CertificateDer::from(der))?;
    }
    let tls = ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = config
        .tls_server_name
        .clone()
        .unwrap_or_else(|| host.trim_matches(['[', ']']).to_owned());
    Ok(Upstream {
        address: format!("{host}:{port}"),
        name: ServerName::try_from(name)?,
        tls: TlsConnector::from(Arc::new(tls)),
    })
}

/// One client connection: requests up, answers down.
async fn relay(
    tcp: TcpStream,
    acceptor: TlsAcceptor,
    upstream: Upstream,
    cut: Arc<AtomicBool>,
    delay: Duration,
) -> Result<()> {
    let client = acceptor.accept(tcp).await?;
    let server = upstream
        .tls
        .connect(
            upstream.name.clone(),
            TcpStream::connect(&upstream.address).await?,
        )
        .await?;
    let (client_read, client_write) = tokio::io::split(client);
    let (mut server_read, mut server_write) = tokio::io::split(server);
    let client_write = Arc::new(Mutex::new(client_write));
    // Whether this connection carries a watch of Leases (it then carries nothing else).
    let lease_watch = Arc::new(AtomicBool::new(false));

    // Down: answers in order, each chunk held until it is due.
    let (chunks, mut due) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = client_write.clone();
    let deliver = tokio::spawn(async move {
        while let Some((at, chunk)) = due.recv().await {
            tokio::time::sleep_until(at).await;
            let mut out = writer.lock().await;
            if out.write_all(&chunk).await.is_err() || out.flush().await.is_err() {
                break;
            }
        }
        let _ = writer.lock().await.shutdown().await;
    });
    let (watching, cutting) = (lease_watch.clone(), cut.clone());
    let down = tokio::spawn(async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match server_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let held = watching.load(Ordering::SeqCst) && cutting.load(Ordering::SeqCst);
            let at = Instant::now() + if held { delay } else { Duration::ZERO };
            if chunks.send((at, buf[..n].to_vec())).is_err() {
                break;
            }
        }
    });

    // Up: request by request.
    let mut reader = BufReader::new(client_read);
    loop {
        let mut head = String::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).await? == 0 {
                let _ = server_write.shutdown().await;
                let _ = down.await;
                let _ = deliver.await;
                return Ok(());
            }
            head.push_str(&line);
            if line == "\r\n" {
                break;
            }
        }
        let mut request_line = head.lines().next().unwrap_or_default().split_whitespace();
        let (method, target) = (
            request_line.next().unwrap_or_default().to_owned(),
            request_line.next().unwrap_or_default().to_owned(),
        );
        let length = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
            .map(|(_, value)| value.trim().parse::<usize>())
            .transpose()?
            .unwrap_or(0);
        if head
            .lines()
            .any(|l| l.to_ascii_lowercase().starts_with("transfer-encoding:"))
        {
            bail!("chunked requests are not relayed: {method} {target}");
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body).await?;
        let path = target.split('?').next().unwrap_or_default();
        let lease = path.contains("/leases");
        if lease && method != "GET" && cut.load(Ordering::SeqCst) {
            let status = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"cut off by the test's proxy","reason":"ServiceUnavailable","code":503}"#;
            let answer = format!(
                "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{status}",
                status.len()
            );
            let mut out = client_write.lock().await;
            out.write_all(answer.as_bytes()).await?;
            out.flush().await?;
            continue;
        }
        let query = target.split_once('?').map(|(_, q)| q).unwrap_or_default();
        if lease
            && method == "GET"
            && query
                .split('&')
                .any(|p| p == "watch=true" || p == "watch=1")
        {
            lease_watch.store(true, Ordering::SeqCst);
        }
        server_write.write_all(head.as_bytes()).await?;
        server_write.write_all(&body).await?;
        server_write.flush().await?;
    }
}
