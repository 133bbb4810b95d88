#include "pathprof/fleet/pyroscope.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "test_profiles.h"

namespace pathprof::fleet {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kForever{60'000};

// A deliberately dumb HTTP/1.1 server on 127.0.0.1: it keeps each request's bytes exactly as they
// arrived (cpp-httplib's server would parse the multipart body away) and answers from a script
// of status codes (then 200). `hold` keeps the answer back until released.
class CaptureServer {
 public:
  struct Request {
    std::string head;  // request line + headers, up to and including the blank line
    std::string body;
    std::string RequestLine() const { return head.substr(0, head.find("\r\n")); }
    std::string Header(const std::string& name) const {
      std::string lower_head = head;
      std::string key = "\r\n" + name + ":";
      std::transform(lower_head.begin(), lower_head.end(), lower_head.begin(), ::tolower);
      std::transform(key.begin(), key.end(), key.begin(), ::tolower);
      const size_t at = lower_head.find(key);
      if (at == std::string::npos) return "<absent>";
      const size_t start = head.find_first_not_of(' ', at + key.size());
      return head.substr(start, head.find("\r\n", start) - start);
    }
  };

  explicit CaptureServer(std::vector<int> script = {}) : script_(std::move(script)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    ::listen(fd_, 16);
    thread_ = std::thread([this] { Serve(); });
  }
  ~CaptureServer() {
    Release();
    ::shutdown(fd_, SHUT_RDWR);  // unblocks accept()
    thread_.join();
    ::close(fd_);
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void Hold() {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = true;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = false;
    cv_.notify_all();
  }
  void WaitForRequests(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return requests_.size() >= n; });
  }
  std::vector<Request> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void Serve() {
    while (true) {
      const int conn = ::accept(fd_, nullptr, nullptr);
      if (conn < 0) return;
      Request request;
      std::string data;
      char buf[4096];
      size_t head_end = std::string::npos;
      size_t need = 0;
      while (true) {
        const ssize_t n = ::read(conn, buf, sizeof(buf));
        if (n <= 0) break;
        data.append(buf, static_cast<size_t>(n));
        if (head_end == std::string::npos &&
            (head_end = data.find("\r\n\r\n")) != std::string::npos) {
          request.head = data.substr(0, head_end + 4);
          need = head_end + 4 + std::stoul(request.Header("Content-Length"));
        }
        if (head_end != std::string::npos && data.size() >= need) break;
      }
      request.body = data.substr(request.head.size());
      int status = 200;
      {
        std::unique_lock<std::mutex> lock(mu_);
        requests_.push_back(request);
        cv_.notify_all();
        cv_.wait(lock, [&] { return !hold_; });
        if (next_ < script_.size()) status = script_[next_++];
      }
      const std::string response = "HTTP/1.1 " + std::to_string(status) +
                                   " X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno";
      (void)!::write(conn, response.data(), response.size());
      ::close(conn);
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> script_;
  size_t next_ = 0;
  bool hold_ = false;
  std::vector<Request> requests_;
};

constexpr int64_t kStart = 1'700'000'000'123'456'789;
constexpr int64_t kEnd = kStart + 60'000'000'000;

ProfileWindow Window(std::string pprof, int64_t start = kStart) {
  ProfileWindow w;
  w.pprof = std::move(pprof);
  w.start_unix_nanos = start;
  w.end_unix_nanos = start + (kEnd - kStart);
  w.sample_rate_hz = 99;
  w.labels = ToLabels({.host = "web-1",
                       .unit = "nginx.service",
                       .cgroup = "/system.slice/x",
                       .executable = "",
                       .build_id = "ab12",
                       .extra = {}});
  return w;
}

PushOptions FastRetries(uint32_t attempts) {
  PushOptions o;
  o.queue_capacity = 2;
  o.max_attempts = attempts;
  o.backoff = {.initial = milliseconds(1), .max = milliseconds(4), .multiplier = 2, .jitter = 0.5};
  o.jitter_seed = 7;
  return o;
}

TEST(PyroscopeNameTest, LabelsGoInBracesAndReservedCharactersAreReplaced) {
  EXPECT_EQ(PyroscopeAppName("pathprof", Window("x").labels),
            "pathprof{host=web-1,unit=nginx.service,cgroup=/system.slice/x,build_id=ab12}");
  uint64_t sanitized = 0;
  EXPECT_EQ(PyroscopeAppName("a", {{"k", "x,y=z{w} v"}}, &sanitized), "a{k=x_y_z_w__v}");
  EXPECT_EQ(sanitized, 5u);
  EXPECT_EQ(PyroscopeAppName("a", {}), "a{}");
}

TEST(PyroscopeRequestTest, ExactBytesForATinyWindow) {
  PyroscopeOptions o;
  o.url = "https://profiles.example:4443/pyro/";
  o.app_name = "svc";
  o.units = "samples";
  o.aggregation_type = "sum";
  o.sample_type_config = R"({"cpu":{"units":"samples"}})";
  o.auth.tenant_id = "team-a";
  ProfileWindow w = Window("PPROF\r\n--bytes");
  w.labels = {{"host", "h 1"}};
  auto request = BuildPyroscopeRequest(o, w, "BOUNDARY");
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  EXPECT_EQ(request->path_and_query,
            "/pyro/ingest?name=svc%7Bhost%3Dh_1%7D&from=1700000000&until=1700000060"
            "&format=pprof&sampleRate=99&spyName=pathprof&units=samples&aggregationType=sum");
  EXPECT_EQ(request->content_type, "multipart/form-data; boundary=BOUNDARY");
  EXPECT_EQ(request->body,
            "--BOUNDARY\r\n"
            "Content-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"\r\n"
            "Content-Type: application/octet-stream\r\n"
            "\r\n"
            "PPROF\r\n--bytes\r\n"
            "--BOUNDARY\r\n"
            "Content-Disposition: form-data; name=\"sample_type_config\"; "
            "filename=\"sample_type_config.json\"\r\n"
            "Content-Type: application/octet-stream\r\n"
            "\r\n"
            "{\"cpu\":{\"units\":\"samples\"}}\r\n"
            "--BOUNDARY--\r\n");
  EXPECT_EQ(request->headers,
            (std::vector<std::pair<std::string, std::string>>{{"User-Agent", "pathprof-fleet/0.1"},
                                                              {"X-Scope-OrgID", "team-a"}}));
  // A boundary that occurs in the payload would cut the part short: refused.
  EXPECT_FALSE(BuildPyroscopeRequest(o, w, "--bytes").ok());
}

TEST(PyroscopeSinkTest, RetriesA503ThenDeliversTheExactPprofBytes) {
  const std::string pprof = testing::MakePprof("hot_loop");
  ASSERT_FALSE(pprof.empty());
  CaptureServer server({503, 200});
  PyroscopeOptions o;
  o.url = server.Url();
  o.auth.bearer_token = "s3cret";
  o.auth.tenant_id = "team-a";
  auto sink = PyroscopeSink::Create(o);
  ASSERT_TRUE(sink.ok()) << sink.status().ToString();
  auto pusher = Pusher::Start(std::move(sink).value(), FastRetries(3));
  ASSERT_TRUE(pusher.ok());
  ASSERT_TRUE((*pusher)->Enqueue(Window(pprof)).ok());
  ASSERT_TRUE((*pusher)->WaitIdle(kForever));

  const PushStats stats = (*pusher)->stats();
  EXPECT_EQ(stats.sent, 1u);
  EXPECT_EQ(stats.attempts, 2u);
  EXPECT_EQ(stats.retries, 1u);
  EXPECT_EQ(stats.bytes_sent, pprof.size());
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  for (const auto& r : requests) {
    EXPECT_EQ(r.RequestLine(),
              "POST /ingest?name=pathprof%7Bhost%3Dweb-1%2Cunit%3Dnginx.service%2Ccgroup%3D%"
              "2Fsystem.slice%2Fx%2Cbuild_id%3Dab12%7D&from=1700000000&until=1700000060"
              "&format=pprof&sampleRate=99&spyName=pathprof HTTP/1.1");
    EXPECT_EQ(r.Header("Authorization"), "Bearer s3cret");
    EXPECT_EQ(r.Header("X-Scope-OrgID"), "team-a");
    EXPECT_EQ(r.Header("User-Agent"), "pathprof-fleet/0.1");
    EXPECT_EQ(r.Header("Content-Length"), std::to_string(r.body.size()));
    const std::string content_type = r.Header("Content-Type");
    const std::string prefix = "multipart/form-data; boundary=";
    ASSERT_EQ(content_type.rfind(prefix, 0), 0u) << content_type;
    const std::string boundary = content_type.substr(prefix.size());
    EXPECT_EQ(boundary.rfind("pathprof-", 0), 0u);
    const std::string part_head =
        "--" + boundary +
        "\r\nContent-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"\r\n"
        "Content-Type: application/octet-stream\r\n\r\n";
    const std::string tail = "\r\n--" + boundary + "--\r\n";
    ASSERT_EQ(r.body.size(), part_head.size() + pprof.size() + tail.size());
    EXPECT_EQ(r.body.substr(0, part_head.size()), part_head);
    EXPECT_TRUE(r.body.compare(part_head.size(), pprof.size(), pprof) == 0)
        << "the profile part is not the pprof bytes";
    EXPECT_EQ(r.body.substr(part_head.size() + pprof.size()), tail);
  }
}

TEST(PyroscopeSinkTest, AnIndependentMultipartParserSeesTheProfileField) {
  // cpp-httplib's server parses multipart/form-data itself: a second opinion on our framing.
  const std::string pprof = testing::MakePprof("parse_me");
  httplib::Server server;
  std::mutex mu;
  httplib::Request seen;
  server.Post("/ingest", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu);
    seen = req;
    res.status = 200;
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serve([&] { server.listen_after_bind(); });
  // bind_to_any_port already listens: a connect before the accept loop runs just waits.

  PyroscopeOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(port);
  o.sample_type_config = R"({"cpu":{"units":"samples","aggregation":"sum"}})";
  o.auth.basic_user = "user";
  o.auth.basic_password = "pass";
  auto sink = PyroscopeSink::Create(o);
  ASSERT_TRUE(sink.ok());
  const SendOutcome outcome = (*sink)->Send(Window(pprof));
  server.stop();
  serve.join();

  EXPECT_EQ(outcome.kind, SendOutcome::Kind::kOk) << outcome.message;
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_TRUE(seen.has_file("profile"));
  EXPECT_EQ(seen.get_file_value("profile").filename, "profile.pprof");
  EXPECT_EQ(seen.get_file_value("profile").content_type, "application/octet-stream");
  EXPECT_TRUE(seen.get_file_value("profile").content == pprof);
  ASSERT_TRUE(seen.has_file("sample_type_config"));
  EXPECT_EQ(seen.get_file_value("sample_type_config").content, o.sample_type_config);
  EXPECT_EQ(seen.get_param_value("name"),
            "pathprof{host=web-1,unit=nginx.service,cgroup=/system.slice/x,build_id=ab12}");
  EXPECT_EQ(seen.get_param_value("from"), "1700000000");
  EXPECT_EQ(seen.get_param_value("until"), "1700000060");
  EXPECT_EQ(seen.get_param_value("format"), "pprof");
  EXPECT_EQ(seen.get_header_value("Authorization"), "Basic dXNlcjpwYXNz");  // base64("user:pass")
}

TEST(PyroscopeSinkTest, A400IsARejectionNotRetried) {
  CaptureServer server({400});
  PyroscopeOptions o;
  o.url = server.Url();
  auto sink = PyroscopeSink::Create(o);
  ASSERT_TRUE(sink.ok());
  auto pusher = Pusher::Start(std::move(sink).value(), FastRetries(5));
  ASSERT_TRUE(pusher.ok());
  ASSERT_TRUE((*pusher)->Enqueue(Window("p")).ok());
  ASSERT_TRUE((*pusher)->WaitIdle(kForever));
  const PushStats stats = (*pusher)->stats();
  EXPECT_EQ(stats.attempts, 1u);
  EXPECT_EQ(stats.dropped_rejected, 1u);
  EXPECT_EQ(stats.last_error, "pyroscope " + server.Url() + ": POST /ingest answered HTTP 400: no");
}

TEST(PyroscopeSinkTest, RefusedConnectionIsRetriedThenCounted) {
  int port = 0;
  {  // a port that was free a moment ago and has no listener
    CaptureServer probe;
    port = std::stoi(probe.Url().substr(std::string("http://127.0.0.1:").size()));
  }
  PyroscopeOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(port);
  auto sink = PyroscopeSink::Create(o);
  ASSERT_TRUE(sink.ok());
  auto pusher = Pusher::Start(std::move(sink).value(), FastRetries(3));
  ASSERT_TRUE(pusher.ok());
  ASSERT_TRUE((*pusher)->Enqueue(Window("p")).ok());
  ASSERT_TRUE((*pusher)->WaitIdle(kForever));
  const PushStats stats = (*pusher)->stats();
  EXPECT_EQ(stats.attempts, 3u);
  EXPECT_EQ(stats.dropped_retries_exhausted, 1u);
  EXPECT_NE(stats.last_error.find("POST /ingest failed"), std::string::npos) << stats.last_error;
}

TEST(PyroscopeSinkTest, QueueOverflowBehindASlowServerIsCounted) {
  CaptureServer server;
  server.Hold();
  PyroscopeOptions o;
  o.url = server.Url();
  auto sink = PyroscopeSink::Create(o);
  ASSERT_TRUE(sink.ok());
  auto pusher = Pusher::Start(std::move(sink).value(), FastRetries(1));  // capacity 2
  ASSERT_TRUE(pusher.ok());
  constexpr int64_t kMinute = 60'000'000'000;
  ASSERT_TRUE((*pusher)->Enqueue(Window("w0", kStart)).ok());
  server.WaitForRequests(1);  // window 0 is on the wire, its answer held back
  for (int i = 1; i <= 4; ++i)
    ASSERT_TRUE((*pusher)->Enqueue(Window("w", kStart + i * kMinute)).ok());
  EXPECT_EQ((*pusher)->stats().dropped_queue_full, 2u);
  server.Release();
  ASSERT_TRUE((*pusher)->WaitIdle(kForever));
  const PushStats stats = (*pusher)->stats();
  EXPECT_EQ(stats.sent, 3u);
  EXPECT_EQ(stats.dropped_queue_full, 2u);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  // Windows 1 and 2 were pushed out; 0, 3, 4 arrived (from = 1700000000 + 60 i).
  EXPECT_NE(requests[0].RequestLine().find("&from=1700000000&"), std::string::npos);
  EXPECT_NE(requests[1].RequestLine().find("&from=1700000180&"), std::string::npos);
  EXPECT_NE(requests[2].RequestLine().find("&from=1700000240&"), std::string::npos);
}

TEST(PyroscopeSinkTest, BadConfigurationIsRefusedUpFront) {
  PyroscopeOptions o;
  o.url = "ftp://x";
  EXPECT_EQ(PyroscopeSink::Create(o).status().code(), ErrorCode::kInvalidArgument);
  o.url = "http://x";
  o.auth.bearer_token = "t";
  o.auth.basic_user = "u";
  EXPECT_EQ(PyroscopeSink::Create(o).status().code(), ErrorCode::kInvalidArgument);
  o.auth.basic_user.clear();
  o.tls.client_cert = "/nonexistent.pem";
  EXPECT_EQ(PyroscopeSink::Create(o).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace pathprof::fleet
