#include "pathctl/client.h"

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "pathprof/api/daemon_socket.h"
#include "pathprof/api/grpc_status.h"
#include "pathprof/api/v1_enums.h"
#include "pathprof/hwmodel/path_descriptor.h"

namespace pathctl {
namespace v1 = pathprof::v1;

namespace {
// The contents of the file a --tls-* flag names; one that cannot be read is a usage problem
// (not an empty PEM, which would quietly fall back to the system's roots or no client identity).
std::string ReadTlsFile(Args& args, const std::string& flag, const std::string& path) {
  if (path.empty()) return "";
  std::ifstream in(path);
  if (!in) {
    args.AddProblem("--" + flag + ": cannot read " + path + " (" + std::strerror(errno) + ")");
    return "";
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
// Why a Unix socket cannot be used, found by trying it directly: gRPC reports all of these as
// UNAVAILABLE. Returns the exit code and sets *message.
int DiagnoseSocket(const std::string& path, std::string* message) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == EACCES) {
      *message = "permission denied on a directory above the socket " + path;
      return kExitSocketDenied;
    }
    *message = "no daemon at " + path + " (" + std::strerror(err) +
               "; start it with: systemctl start pathprofd)";
    return kExitUnavailable;
  }
  // Non-blocking: a blocking connect to a socket whose listen backlog is full waits until the
  // daemon accepts, which under a flood is never (and --timeout would not cover it). A Unix
  // socket answers a non-blocking connect at once: connected, refused, or EAGAIN when full.
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  const int rc = fd < 0 ? -1 : connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  const int err = errno;
  if (fd >= 0) close(fd);
  if (rc != 0 && err == EAGAIN) {
    *message = "the daemon at " + path + " does not accept connections (its backlog is full)";
    return kExitUnavailable;
  }
  if (rc == 0) {
    *message = "the daemon at " + path + " accepted a connection but the call failed";
    return kExitUnavailable;
  }
  if (err == EACCES || err == EPERM) {
    const group* g = getgrgid(st.st_gid);
    const std::string group = g != nullptr ? g->gr_name : std::to_string(st.st_gid);
    *message = "permission denied on the socket " + path + " (only root and group " + group +
               " may connect; join it: sudo usermod -aG " + group + " $USER, then log in again)";
    return kExitSocketDenied;
  }
  if (err == ECONNREFUSED) {
    *message = "no daemon listening on " + path +
               " (the socket is left from one that ended; start it with: systemctl start "
               "pathprofd)";
    return kExitUnavailable;
  }
  *message = "cannot connect to " + path + ": " + std::strerror(err);
  return kExitUnavailable;
}

}  // namespace

std::vector<Flag> ClientFlags() {
  return {
      StringFlag("socket", "PATH", "",
                 "the daemon's Unix socket (default /run/pathprof/pathprofd.sock, or "
                 "$PATHPROF_SOCKET)"),
      StringFlag("address", "H:P", "",
                 "a daemon over TCP with TLS (--tls-ca, --tls-cert, --tls-key)"),
      StringFlag("tls-ca", "FILE", "",
                 "with --address: the CA that signed the daemon's certificate"),
      StringFlag("tls-cert", "FILE", "", "with --address: this client's certificate"),
      StringFlag("tls-key", "FILE", "", "with --address: this client's key"),
      DurationFlag("timeout", "10s", 1, 0.001, 86400, "per-call deadline"),
      BoolFlag("json", "machine-readable output"),
  };
}

Client::Client(Args& args) {
  std::string socket = args.Get("socket");
  std::string address = args.Get("address");
  timeout_s_ = args.Seconds("timeout");
  explicit_ = !socket.empty() || !address.empty() || pathprof::api::DaemonSocketFromEnvironment();
  grpc::ChannelArguments ch;
  ch.SetMaxReceiveMessageSize(256 << 20);
  if (!address.empty()) {
    tcp_ = true;
    target_ = address;
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = ReadTlsFile(args, "tls-ca", args.Get("tls-ca"));
    o.pem_cert_chain = ReadTlsFile(args, "tls-cert", args.Get("tls-cert"));
    o.pem_private_key = ReadTlsFile(args, "tls-key", args.Get("tls-key"));
    if (o.pem_cert_chain.empty() != o.pem_private_key.empty())
      args.AddProblem("--tls-cert and --tls-key go together");
    channel_ = grpc::CreateCustomChannel(address, grpc::SslCredentials(o), ch);
  } else {
    for (const char* flag : {"tls-ca", "tls-cert", "tls-key"})
      if (args.Has(flag))
        args.AddProblem(std::string("--") + flag +
                        " goes with --address (a Unix socket has no TLS)");
    socket = pathprof::api::DaemonSocketPath(socket);
    target_ = socket;
    channel_ = grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), ch);
  }
  stub_ = v1::PathProfiler::NewStub(channel_);
}

std::unique_ptr<grpc::ClientContext> Client::Context() const {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() +
                  std::chrono::microseconds(static_cast<int64_t>(timeout_s_ * 1e6)));
  return c;
}

int ExitCodeFor(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return kExitOk;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return kExitTimeout;
    case grpc::StatusCode::UNAVAILABLE:
      return kExitUnavailable;
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return kExitDenied;
    case grpc::StatusCode::NOT_FOUND:
      return kExitNotFound;
    case grpc::StatusCode::INVALID_ARGUMENT:
      return kExitUsage;
    default:
      return kExitError;
  }
}

int FailLocal(const std::string& command, const pathprof::Status& status) {
  std::fprintf(stderr, "pathctl %s: %s\n", command.c_str(), status.ToString().c_str());
  return ExitCodeFor(pathprof::api::ToGrpcCode(status.code()));
}

int Client::Fail(const std::string& command, const grpc::Status& s) const {
  const std::string& m = s.error_message();
  switch (s.error_code()) {
    case grpc::StatusCode::DEADLINE_EXCEEDED: {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", timeout_s_);
      std::fprintf(stderr,
                   "pathctl %s: timed out after %s s waiting for the daemon at %s (it may be "
                   "busy or wedged; raise --timeout, or see journalctl -u pathprofd)\n",
                   command.c_str(), secs, target_.c_str());
      break;
    }
    case grpc::StatusCode::UNAVAILABLE: {
      if (tcp_) {
        std::fprintf(stderr, "pathctl %s: daemon not reachable at %s (%s)\n", command.c_str(),
                     target_.c_str(), m.c_str());
        break;
      }
      std::string why;
      const int code = DiagnoseSocket(target_, &why);
      std::fprintf(stderr, "pathctl %s: %s\n", command.c_str(), why.c_str());
      return code;
    }
    case grpc::StatusCode::PERMISSION_DENIED:
      std::fprintf(stderr, "pathctl %s: permission denied: %s\n", command.c_str(), m.c_str());
      break;
    case grpc::StatusCode::UNAUTHENTICATED:
      std::fprintf(stderr, "pathctl %s: not authenticated: %s\n", command.c_str(), m.c_str());
      break;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      std::fprintf(stderr, "pathctl %s: limit reached: %s\n", command.c_str(), m.c_str());
      break;
    case grpc::StatusCode::NOT_FOUND:
      std::fprintf(stderr, "pathctl %s: %s\n", command.c_str(), m.c_str());
      break;
    case grpc::StatusCode::INVALID_ARGUMENT:
      std::fprintf(stderr, "pathctl %s: invalid request: %s\n", command.c_str(), m.c_str());
      break;
    default:
      std::fprintf(stderr, "pathctl %s: daemon error: %s (grpc code %d)\n", command.c_str(),
                   m.c_str(), static_cast<int>(s.error_code()));
      break;
  }
  return ExitCodeFor(s.error_code());
}

}  // namespace pathctl
