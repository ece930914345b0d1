{
  "targets": [
    {
      "target_name": "parley_dsp",
      "sources": [
        "src/addon.cc",
        "src/handle.cc",
        "src/g711.cc",
        "src/bind_g711.cc",
        "src/resampler.cc",
        "src/bind_resampler.cc",
        "src/fft.cc",
        "src/vad.cc",
        "src/bind_vad.cc",
        "src/dtmf.cc",
        "src/tone.cc",
        "src/bind_detectors.cc",
        "src/time_stretch.cc", "src/bind_time_stretch.cc",
        "src/block_writer.cc", "src/bind_block_writer.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS"],
      "cflags_cc!": ["-std=gnu++17", "-std=gnu++1y", "-O3"],
      "cflags_cc": ["-std=c++17", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "conditions": [
        ["OS=='linux'", {
          "sources": ["src/udp_io.cc", "src/udp_ring.cc", "src/bind_udp.cc"]
        }],
        ["OS=='mac'", {
          "xcode_settings": {
            "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
            "OTHER_CPLUSPLUSFLAGS": ["$(inherited)", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"]
          }
        }]
      ]
    }
  ]
}
